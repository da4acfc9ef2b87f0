"""What an MCP server asks its client during a tool call (elicitation, sampling, roots), asked of
the call's own caller as a toolmesh function asks it (runtimes/functions/asking.py: the replay contract).
Used by the stdio bridge in a pod (the call's Context asks) and by the gateway's remote MCP source
(an Asker on the call's metadata asks).

The server's request becomes the call's ask, its params as the server wrote them. When the caller's
answer is in the call's answers, it is the server's result at once; when it is not, the ask raises
`InputRequired`: the session answers the server with an error and cancels the tool call, the call
ends input-required, and the gateway gets the answer from the caller and runs the call again (the
server's tool runs again from the start, and its ask is answered this time). A caller that cannot
answer gets the same refusal as for a Python function's ask.

Roots are the caller's, not the server's client's: one server serves many callers, so `roots/list`
is answered only during a call (by that call's caller, as `ctx.list_roots` is), and the capability
is offered without `listChanged` (the gateway cannot tell a server when "its" roots change, as it
has no roots of its own). A caller with no roots to give (HTTP, gRPC, OpenAI formats) gets the same
409 `input_required` as for `ctx.list_roots`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolmesh.runtimes.functions.asking import Elicited, Kind, Root, Sampled

#: Answers a request the server sent during a request (its method and params) with its result.
#: What it raises ends the request it belongs to with that exception (the server's request gets an
#: error, and the server is told the request is cancelled): how a call stops to ask its caller.
Answerer = Callable[[str, dict[str, Any]], dict[str, Any]]
#: Asks the caller one thing (its kind and params) and returns the answer, or raises InputRequired:
#: a call Context's or an Asker's `ask`, one at a time.
Ask = Callable[[Kind, dict[str, Any]], Any]
#: The kind of ask each request of the server's is: the requests an `Answerer` answers.
KINDS: dict[str, Kind] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
#: What the client offers in `initialize`: a server sends these requests only to a client that does
#: (server-everything lists the tools that make them only then). No `listChanged` for roots: they
#: are each call's caller's, asked anew by each call, never a list that changes under the server.
CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


def answerer(ask: Ask) -> Answerer:
    """What answers the server's requests during a call: its caller, through `ask`, by replay."""

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked = {key: value for key, value in params.items() if key != "_meta"}
        return as_result(ask(KINDS[method], asked))

    return answer


def as_result(answer: Any) -> dict[str, Any]:
    """The caller's answer (as the context gives it) as the MCP result the server expects."""
    if isinstance(answer, Elicited):
        return (
            {"action": answer.action, "content": answer.content}
            if answer.accepted
            else {"action": answer.action}
        )
    if isinstance(answer, Sampled):
        content = answer.content if answer.content is not None else {"type": "text", "text": answer.text}
        result = {"role": answer.role, "content": content, "model": answer.model}
        if answer.stop_reason is not None:
            result["stopReason"] = answer.stop_reason
        return result
    if isinstance(answer, list) and all(isinstance(root, Root) for root in answer):
        return {"roots": [_root(root) for root in answer]}
    raise TypeError(f"no MCP result for {answer!r}")


def _root(root: Root) -> dict[str, Any]:
    return {"uri": root.uri} if root.name is None else {"uri": root.uri, "name": root.name}
