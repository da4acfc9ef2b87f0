"""What a stdio MCP server asks its client during a tool call (elicitation, sampling), asked of the
call's own caller as a toolmesh function asks it (runtimes/functions/asking.py: the replay contract).

The server's request becomes the call context's ask, its params as the server wrote them. When the
caller's answer is in the call's answers, it is the server's result at once; when it is not, the
ask raises `InputRequired`: the session answers the server with an error and cancels the tool call,
the call ends input-required, and the gateway gets the answer from the caller and runs the call again
(the server's tool runs again from the start, and its ask is answered this time). A caller that
cannot answer gets the same refusal as for a Python function's ask.
"""

from __future__ import annotations

from typing import Any

from toolmesh.runtimes.functions.asking import Elicited, Kind, Sampled
from toolmesh.runtimes.functions.context import Context
from toolmesh.runtimes.mcp.stdio_session import Answerer

#: The kind of ask each request of the server's is.
KINDS: dict[str, Kind] = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling"}


def answerer(ctx: Context) -> Answerer:
    """What answers the server's requests during a call in `ctx`: its caller, by replay."""

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked = {key: value for key, value in params.items() if key != "_meta"}
        return as_result(ctx.ask_all_sync((KINDS[method], None, asked))[0])

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
    raise TypeError(f"no MCP result for {answer!r}")
