"""tools/list, resources/list, prompts/list, resources/read and prompts/get on a stateless POST,
answered without the SDK's per-request machinery (the fast path of direct_calls.py, for reads).

The request is checked as `DirectCalls` checks a tools/call (the same envelope, `_meta` and, on
2026-07-28, ladder checks; anything else goes to the SDK untouched), then served by the same
handlers the SDK would call (endpoint.py, resources.py, prompts.py), through the server's own
middleware chain, with the result shaped by the SDK runner's own `_serialize` (cache hints,
the per-version sieve, `resultType`, the `serverInfo` stamp) and framed as the SDK's transport
frames it: one `event: message` frame on 2025-11-25, one JSON body on 2026-07-28. An error the
handler raises is written as the SDK writes it (on 2026-07-28 with the table's HTTP status).

Listings are pure, so their encoded `result` is cached per catalog version and per caller scope
(key scopes, namespace, tool-search mode, cursor, revision): a catalog change (reload) or a
list_changed heard from the feed clears it (`invalidate`). A tools/list with the SEP-1821
`query` is a search, answered each time.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import pydantic_core
from mcp.server import Server, ServerRequestContext
from mcp.server.runner import ServerRunner
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp_types import JSONRPCError
from mcp_types import methods as _methods
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Scope, Send

import toolmesh.tracing as tracing
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.mcp.caller import NAMESPACE
from toolmesh.gateway.mcp.tool_search import SEARCHING

#: What each method's params may hold to be served here (anything more: the SDK).
READS: Mapping[str, frozenset[str]] = {
    "tools/list": frozenset({"cursor", "query", "_meta"}),
    "resources/list": frozenset({"cursor", "_meta"}),
    "prompts/list": frozenset({"cursor", "_meta"}),
    "resources/read": frozenset({"uri", "_meta"}),
    "prompts/get": frozenset({"name", "arguments", "_meta"}),
}
_LISTINGS = frozenset({"tools/list", "resources/list", "prompts/list"})
#: Most cached listings; past it the cache starts again (cursors are the only unbounded part).
MAX_CACHED = 1024
SSE_HEADERS = [
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
    (b"x-accel-buffering", b"no"),
]

Handler = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[Any]]
_Key = tuple[str, str, tuple[str, ...], bool, str, bool, str | None]


#: What the fast path borrows from the SDK's private side; an SDK without it answers every read.
_BORROWED = (
    (ServerRunner, "_serialize"),
    (ServerRunner, "_compose_server_middleware"),
    (_methods, "validate_client_request"),
)


class DirectReads:
    """Serves the methods of `READS` for `DirectCalls` (see the module's docstring)."""

    def __init__(self, server: Server[Any]) -> None:
        self._server = server
        self.enabled = all(hasattr(owner, name) for owner, name in _BORROWED)
        # Only its server is read by `_serialize` and the middleware composition.
        self._runner = ServerRunner(server=server, connection=cast(Any, None), lifespan_state=None)
        self._cache: dict[_Key, bytes] = {}
        #: Bumped by each change, so a listing computed across one is not kept.
        self._generation = 0

    def invalidate(self) -> None:
        """Forget every cached listing (the catalog changed)."""
        self._cache.clear()
        self._generation += 1

    async def serve(
        self,
        scope: Scope,
        send: Send,
        principal: Principal,
        decoded: dict[str, Any],
        version: str,
        modern: bool,
    ) -> bool:
        """Answer the read `decoded`; False (nothing sent) when the SDK must answer it."""
        if not self.enabled:
            return False
        method: str = decoded["method"]
        request_id = decoded["id"]
        params: dict[str, Any] | None = decoded.get("params")
        entry = self._server.get_request_handler(method)
        if entry is None:
            return False
        try:
            _methods.validate_client_request(method, version, params)
        except (ValidationError, KeyError):
            return False  # the SDK's error, from the SDK
        state = scope.get("state", {})
        key: _Key | None = None
        if method in _LISTINGS and not (params and "query" in params):
            key = (
                method,
                version,
                tuple(principal.scopes),
                principal.privileged,
                str(state.get(NAMESPACE, "")),
                bool(state.get(SEARCHING)),
                (params or {}).get("cursor"),  # a string or none: validated above
            )
            # With tracing on, the listing is served through the middleware chain, whose first
            # link makes the SDK's span of the request (the cached bytes would make none).
            cached = None if tracing.enabled() else self._cache.get(key)
            if cached is not None:
                await self._send(request_id, cached, modern, send)
                return True
        generation = self._generation
        try:
            typed = entry.params_type.model_validate({} if params is None else params, by_name=False)
        except ValidationError:
            return False
        ctx: ServerRequestContext[Any, Any] = ServerRequestContext(
            session=cast(Any, None),
            lifespan_context=None,
            protocol_version=version,
            method=method,
            params=params,
            request_id=request_id,
            meta=cast(Any, (params or {}).get("_meta")),
            request=Request(scope),
        )

        async def inner(ctx: ServerRequestContext[Any, Any]) -> Any:
            result = await entry.handler(ctx, typed)
            return self._runner._serialize(ctx.method, version, result)

        try:
            wire = await self._runner._compose_server_middleware(inner)(ctx)
        except (MCPError, ValidationError) as exc:
            if key is not None:
                return False  # a listing is pure: the SDK answers it again, its way
            await self._error(request_id, exc, modern, send)
            return True
        encoded = _encode(wire, modern)
        if key is not None and generation == self._generation:
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            self._cache[key] = encoded
        await self._send(request_id, encoded, modern, send)
        return True

    @staticmethod
    async def _send(request_id: Any, result: bytes, modern: bool, send: Send) -> None:
        ident = _encode(request_id, modern)
        message = b'{"jsonrpc":"2.0","id":' + ident + b',"result":' + result + b"}"
        if modern:
            headers = [
                (b"content-length", str(len(message)).encode()),
                (b"content-type", b"application/json"),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": message})
            return
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        frame = b"event: message\r\ndata: " + message + b"\r\n\r\n"
        await send({"type": "http.response.body", "body": frame})

    @staticmethod
    async def _error(request_id: Any, exc: Exception, modern: bool, send: Send) -> None:
        error = handler_exception_to_error_data(exc)
        assert error is not None  # MCPError and ValidationError are both on its ladder
        message = JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        if modern:
            status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
            document = message.model_dump(mode="json", by_alias=True, exclude_none=True)
            body = json.dumps(document, separators=(",", ":")).encode()
            headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        data = message.model_dump_json(by_alias=True, exclude_unset=True)
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await send({"type": "http.response.body", "body": f"event: message\r\ndata: {data}\r\n\r\n".encode()})


def _encode(value: Any, modern: bool) -> bytes:
    # 2026-07-28: json.dumps of the model's dump with None left out (the modern transport);
    # 2025-11-25: pydantic's JSON (the handshake transport's model_dump_json).
    if modern:
        return json.dumps(_without_none(value), separators=(",", ":")).encode()
    return pydantic_core.to_json(value)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value
