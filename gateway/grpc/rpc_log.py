"""Around every Mesh gRPC call: its request id, its access-log line and its server span.

The id is the request's `request_id` field, else an ``x-request-id`` metadata entry, else a new
one, which is then written into the field so the call uses it; it is sent back as
``x-request-id`` in the trailing metadata of a unary call (errors included) and in the initial
metadata of a server-streaming one. The access-log line (`[gateway] access_log`):

    {"ts": ..., "level": "info", "logger": "toolmesh.access", "msg": "grpc",
     "method": "/toolmesh.v1.Mesh/Invoke", "code": "OK", "duration_ms": 0.9,
     "request_id": "...", "principal": "anonymous"}

With tracing on, the call runs inside a server span whose parent is the ``traceparent`` in
its metadata (how pods' ctx.invoke calls join their caller's trace). Only the Mesh service
is wrapped: health probes and reflection neither log nor trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

import grpc

import toolmesh.tracing as tracing
from toolmesh.gateway.core.auth import Authenticator
from toolmesh.gateway.core.requests import MAX_REQUEST_ID
from toolmesh.gateway.grpc.decoding import Context, Handler
from toolmesh.logs.lines import LineBuffer, access
from toolmesh.protocol.calls import new_request_id

MESH_PREFIX = "/toolmesh.v1.Mesh/"
REQUEST_ID_KEY = "x-request-id"


class _Rpc:
    """What one call's line needs, gathered from its metadata in one pass."""

    __slots__ = ("authorization", "request_id", "started", "trace")

    def __init__(self, request: Any, context: Context, traced: bool) -> None:
        self.started = time.perf_counter()
        self.authorization: str | None = None
        chosen = ""
        trace: list[tuple[str, str]] = []
        for key, value in context.invocation_metadata() or ():
            if key == "authorization":
                self.authorization = value if isinstance(value, str) else value.decode()
            elif key == REQUEST_ID_KEY and isinstance(value, str) and len(value) <= MAX_REQUEST_ID:
                chosen = value
            elif traced and key in (tracing.TRACEPARENT, tracing.TRACESTATE) and isinstance(value, str):
                trace.append((key, value))
        self.trace: tracing.Carrier = tuple(trace)
        own = getattr(request, "request_id", None)
        if own:
            self.request_id: str = own
        else:
            self.request_id = chosen or new_request_id()
            if own is not None:
                request.request_id = self.request_id


class RpcLog:
    """Wraps the Mesh service's handlers, once each, when they are registered (wrapping_server.py)."""

    def __init__(self, auth: Authenticator, *, log: bool = True) -> None:
        self._auth = auth
        self.lines = LineBuffer() if log and access.isEnabledFor(logging.INFO) else None

    def wrap(self, method: str, handler: Handler) -> Handler:
        if not method.startswith(MESH_PREFIX) or handler.request_streaming:
            return handler
        if handler.unary_unary is not None:
            # The stubs type behaviours as sync ones; on a grpc.aio server they are coroutines.
            behaviour: Any = handler.unary_unary

            async def unary(request: Any, context: Context) -> Any:
                rpc = await self._begin(request, context, streamed=False)
                try:
                    with tracing.span(method, {"rpc.method": method}, parent=rpc.trace, server=True):
                        return await behaviour(request, context)
                finally:
                    self._end(method, rpc, context)

            return grpc.unary_unary_rpc_method_handler(
                unary, handler.request_deserializer, handler.response_serializer
            )
        stream_behaviour: Any = handler.unary_stream
        assert stream_behaviour is not None

        async def stream(request: Any, context: Context) -> AsyncIterator[Any]:
            rpc = await self._begin(request, context, streamed=True)
            try:
                with tracing.span(method, {"rpc.method": method}, parent=rpc.trace, server=True):
                    async for item in stream_behaviour(request, context):
                        yield item
            finally:
                self._end(method, rpc, context)

        return grpc.unary_stream_rpc_method_handler(
            stream, handler.request_deserializer, handler.response_serializer
        )

    async def _begin(self, request: Any, context: Context, *, streamed: bool) -> _Rpc:
        rpc = _Rpc(request, context, tracing.enabled())
        sent = ((REQUEST_ID_KEY, rpc.request_id),)
        if streamed:
            # Before the first item, which may be long in coming.
            await context.send_initial_metadata(sent)
        else:
            # A unary answer's trailers leave with it, in the one batch that sends the answer;
            # initial metadata would be a batch of its own through C-core and its poller thread
            # (bench/RESULTS.md, issue #31). Servicers add theirs to it (wire.abort).
            context.set_trailing_metadata(sent)
        await self._auth.prepare(rpc.authorization)  # an OAuth issuer's new key, before the servicer
        return rpc

    def _end(self, method: str, rpc: _Rpc, context: Context) -> None:
        if self.lines is None:
            return
        code = context.code()
        name = "OK" if code is None else code.name if isinstance(code, grpc.StatusCode) else str(code)
        self.lines.add(
            f'{{"ts": {time.time():.6f}, "level": "info", "logger": "toolmesh.access", '
            f'"msg": "grpc", "method": {_quote(method)}, "code": "{name}", '
            f'"duration_ms": {(time.perf_counter() - rpc.started) * 1000:.3f}, '
            f'"request_id": {_quote(rpc.request_id)}, '
            f'"principal": {_quote(self._auth.name_of(rpc.authorization))}}}\n'
        )

    def flush(self) -> None:
        if self.lines is not None:
            self.lines.flush()
