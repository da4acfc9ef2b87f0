"""The MCP SDK's span of a tools/call, made for the calls the fast path answers (direct_calls.py).

With tracing on, the SDK wraps each request in a span of its `OpenTelemetryMiddleware` (``tools/call
<name>``, kind SERVER, the method, revision, request id and tool as attributes, an error status
for a tool error or a refusal), under the request's HTTP span and above the call's own spans. The
fast path runs the very same middleware around its call (`traced`), so its trace is the SDK's.

A call the fast path hands to the SDK mid-way (direct_calls.py's `Adopted`) is already inside that
span: `AdoptedSpans`, which stands in for the SDK's middleware in the server's chain, makes no
second one for it and passes what the SDK's handler returned or raised back to the fast path's
span, which records it as the SDK's middleware would have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from mcp.server import Server, ServerRequestContext
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import CallNext, HandlerResult
from starlette.requests import Request
from starlette.types import Scope

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
    scope: Scope,
    version: str,
    request_id: Any,
    params: dict[str, Any],
    call: Callable[[], Awaitable[HandlerResult]],
) -> HandlerResult:
    """`call` inside the span the SDK's middleware makes for this tools/call request."""
    ctx: ServerRequestContext[Any, Any] = ServerRequestContext(
        session=cast(Any, None),
        lifespan_context=None,
        protocol_version=version,
        method="tools/call",
        params=params,
        request_id=request_id,
        meta=cast(Any, params.get("_meta")),
        request=Request(scope),
    )

    async def call_next(_: ServerRequestContext[Any, Any]) -> HandlerResult:
        return await call()

    return await _MIDDLEWARE(ctx, call_next)


_MIDDLEWARE = OpenTelemetryMiddleware()
