"""What the gateway answers a remote server's own requests, on either transport: `ping`, and the
call's asks (elicitation, sampling, roots: runtimes/mcp/server_asks.py) when a call's caller can be
asked; anything else is declined, as the SDK's client declines what it has no callback for."""

from __future__ import annotations

from typing import Any

from toolmesh.runtimes.mcp.server_asks import KINDS, Answerer, answers

#: JSON-RPC's "method not found", the answer to requests the gateway does not serve.
METHOD_NOT_FOUND = -32601
#: JSON-RPC's "internal error", the answer to a request whose call stopped to ask its caller.
INTERNAL_ERROR = -32603


def reply_to(
    message: dict[str, Any], answer: Answerer | None, roots: bool
) -> tuple[dict[str, Any], Exception | None]:
    """The reply to the server's request `message`, answered by `answer` (the caller of the call it
    is taken for; None: no one), and what `answer` raised: the call then ends with it (the server
    is answered an error and told the call is cancelled)."""
    method = str(message.get("method"))
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
    if method == "ping":
        reply["result"] = {}
    elif answers(method, roots) and answer is not None:
        params = message.get("params")
        try:
            reply["result"] = answer(method, params if isinstance(params, dict) else {})
        except Exception as exc:
            reply["error"] = {"code": INTERNAL_ERROR, "message": str(exc) or type(exc).__name__}
            return reply, exc
    else:
        refused = (
            f"{method} is answered by a tool call's caller, and no one call in flight is asking"
            if method in KINDS
            else f"{method} is not available through toolmesh"
        )
        reply["error"] = {"code": METHOD_NOT_FOUND, "message": refused}
    return reply, None


def list_changed(message: dict[str, Any]) -> str | None:
    """The method of `message` when it is a `notifications/*/list_changed`."""
    method = message.get("method")
    return method if isinstance(method, str) and method.endswith("/list_changed") else None
