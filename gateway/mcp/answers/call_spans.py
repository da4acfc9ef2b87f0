"""The MCP SDK's span of a tools/call, made for the calls the fast path answers (direct_calls.py).

With tracing on, the SDK wraps each request in a span of its `OpenTelemetryMiddleware` (``tools/call
<name>``, kind SERVER, the method, revision, request id and tool as attributes, an error status
for a tool error or a refusal), under the request's HTTP span and above the call's own spans. The
fast path makes the same span around its call (`traced`), as toolmesh's own span rather than
through OpenTelemetry's SDK, whose span and export were most of what tracing added to a
fast-path call (bench/RESULTS.md): same name, kind, attributes and statuses, recorded as
`_otel.py` records them (tests/gateway/mcp/test_direct_spans.py compares the trees), except that
an unexpected exception's status is not followed by an exception event.

A call the fast path hands to the SDK mid-way (direct_calls.py's `Adopted`) is already inside that
span: `AdoptedSpans`, which stands in for the SDK's middleware in the server's chain, makes no
second one for it and passes what the SDK's handler returned or raised back to the fast path's
span, which records it as the SDK's middleware would have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult
from pydantic import ValidationError
from starlette.requests import Request

import toolmesh.tracing as tracing

#: Where the endpoint leaves a call in flight for `_call_tool` to adopt (the scope's state).
ADOPTED = "toolmesh_adopted_call"


class Handed:
    """What the SDK did with a call it took over inside the fast path's span."""

    returned: HandlerResult | None = None
    raised: Exception | None = None


class AdoptedSpans(OpenTelemetryMiddleware):
    """The SDK's tracing middleware, but for a call adopted inside the fast path's span."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        state = ctx.request.scope.get("state", {}) if isinstance(ctx.request, Request) else {}
        handed = getattr(state.get(ADOPTED), "handed", None)
        if not isinstance(handed, Handed):
            return await super().__call__(ctx, call_next)
        try:
            handed.returned = await call_next(ctx)
        except Exception as exc:
            handed.raised = exc
            raise
        return handed.returned


def install(server: Server[Any]) -> None:
    """Put `AdoptedSpans` in the place of the SDK's tracing middleware in `server`'s chain."""
    server.middleware[:] = [
        AdoptedSpans() if type(m) is OpenTelemetryMiddleware else m for m in server.middleware
    ]


async def traced(
    version: str,
    request_id: Any,
    params: dict[str, Any],
    call: Callable[[], Awaitable[HandlerResult]],
) -> HandlerResult:
    """`call` inside the span the SDK's middleware makes for this tools/call request, made as
    toolmesh's own span (see the module's docstring)."""
    name = params.get("name")
    target = name if isinstance(name, str) else None
    attributes: dict[str, str | int | float | bool] = {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": version,
    }
    if request_id is not None:
        attributes["jsonrpc.request.id"] = str(request_id)
    attributes["gen_ai.operation.name"] = "execute_tool"
    if target is not None:
        attributes["gen_ai.tool.name"] = target
    raised: BaseException | None = None
    # What passes through is recorded here as the SDK's middleware records it (`_otel.py`), not
    # by the span's own exit (which names the exception's type), so it is raised after the span.
    with tracing.span(f"tools/call{f' {target}' if target else ''}", attributes, server=True) as span:
        try:
            result = await call()
        except MCPError as exc:
            code = str(exc.error.code)
            _failed(span, {"error.type": code, "rpc.response.status_code": code}, exc.error.message)
            raised = exc
        except ValidationError as exc:
            code = str(INVALID_PARAMS)
            _failed(
                span, {"error.type": code, "rpc.response.status_code": code}, "Invalid request parameters"
            )
            raised = exc
        except Exception as exc:
            _failed(span, {"error.type": type(exc).__qualname__}, str(exc))
            raised = exc
        except BaseException as exc:  # a cancellation: the SDK's span records nothing of it
            raised = exc
        else:
            match result:
                case CallToolResult(is_error=True) | {"isError": True}:
                    _failed(span, {"error.type": "tool_error"}, "")
                case _:
                    pass
    if raised is not None:
        raise raised
    return result


def _failed(span: Any, attributes: dict[str, str], description: str) -> None:
    if span is not None:
        span.attributes.update(attributes)
        tracing.mark_failed(span, description)
