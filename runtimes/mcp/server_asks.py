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
is offered (only for a runtime with `roots = true`: ROOTS_CAPABILITIES) without `listChanged` (the
gateway cannot tell a server when "its" roots change, as it has no roots of its own). A caller that
cannot give roots (HTTP, gRPC, OpenAI formats, an MCP client without the capability) has none: the
server is answered an empty list and its tool goes on. Not a 409 as for `ctx.list_roots`, because a
server's `roots/list` may not be the call's at all: servers ask for roots on their own
(server-everything does just after `initialize`), and on stdio or a session's standalone stream
such a request is taken for the one call in flight, which would fail a call that never needed roots.
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
#: (server-everything lists the tools that make them only then).
CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}}
#: The same with roots, for a runtime with `roots = true`. Not by default: stdio and a session's
#: standalone stream cannot say whose a request is, and servers ask for roots on their own (just
#: after `initialize`), which would be taken for the call in flight. No `listChanged`: roots are
#: each call's caller's, asked anew by each call, never a list that changes under the server.
ROOTS_CAPABILITIES: dict[str, Any] = {**CAPABILITIES, "roots": {}}


def capabilities(roots: bool) -> dict[str, Any]:
    """What the client offers: `CAPABILITIES`, and roots when the runtime says so."""
    return ROOTS_CAPABILITIES if roots else CAPABILITIES


def answers(method: str, roots: bool) -> bool:
    """Whether the server's request `method` is a call's ask (roots only when offered)."""
    return method in KINDS and (roots or KINDS[method] != "roots")


#: The answer to `roots/list` for a caller that cannot give roots: it has none.
NO_ROOTS: dict[str, Any] = {"roots": []}


def answerer(ask: Ask, can_answer: Callable[[Kind], bool]) -> Answerer:
    """What answers the server's requests during a call: its caller, through `ask`, by replay;
    `can_answer` says which kinds the caller declared it answers (roots: see the module's doc)."""

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        kind = KINDS[method]
        if kind == "roots" and not can_answer(kind):
            return dict(NO_ROOTS)
        asked = {key: value for key, value in params.items() if key != "_meta"}
        return as_result(ask(kind, asked))

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
