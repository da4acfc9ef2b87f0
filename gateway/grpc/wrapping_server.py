"""Handlers wrapped once, when a service is registered, instead of by interceptors on every call.

grpc.aio runs a server's interceptors on every call: a coroutine per interceptor, a partial for
its continuation and the handler lookup behind them, before the handler itself starts. The
wrappers the gateway needs (decoding.py's lenient deserializer, rpc_log.py's request id, line and
span) depend on the method alone, so they are applied to each handler as it is registered and the
server runs with no interceptors:

    public = WrappingServer(grpc.aio.server(options=...), (rpc_log.wrap, RejectUndecodable.wrap))
    mesh_pb2_grpc.add_MeshServicer_to_server(servicer, public.registrar)

The first wrapper is the outermost, as the first interceptor was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import grpc

from toolmesh.gateway.grpc.decoding import Handler

if TYPE_CHECKING:  # generic only in the type stubs
    _Generic = grpc.GenericRpcHandler[Any, Any]
else:
    _Generic = grpc.GenericRpcHandler

#: Given a method's full name (``/package.Service/Method``) and its handler, the handler to run.
Wrap = Callable[[str, Handler], Handler]


class _WrappedGeneric(_Generic):
    """A generic handler (how services are also registered) whose handlers come out wrapped."""

    def __init__(self, inner: _Generic, wrap: Wrap) -> None:
        self._inner = inner
        self._wrap = wrap
        self._wrapped: dict[str, Handler] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Handler | None:
        method = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is None:
            handler = self._inner.service(handler_call_details)
            if handler is None:  # not ours: never kept, or any client could grow the dict
                return None
            wrapped = self._wrapped[method] = self._wrap(method, handler)  # it never changes
        return wrapped


class WrappingServer:
    """Registers services on `server` with every handler passed through `wraps`."""

    def __init__(self, server: grpc.aio.Server, wraps: Sequence[Wrap]) -> None:
        self.server = server
        self._wraps = tuple(reversed(wraps))  # applied innermost first

    @property
    def registrar(self) -> grpc.aio.Server:
        """What generated `add_*Servicer_to_server` functions take: they call only the two
        registration methods below."""
        return cast(grpc.aio.Server, self)

    def wrap(self, method: str, handler: Handler) -> Handler:
        for wrap in self._wraps:
            handler = wrap(method, handler)
        return handler

    def add_generic_rpc_handlers(self, handlers: Sequence[_Generic]) -> None:
        self.server.add_generic_rpc_handlers([_WrappedGeneric(h, self.wrap) for h in handlers])

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        wrapped = {name: self.wrap(f"/{service}/{name}", h) for name, h in handlers.items()}
        # grpcio has it since 1.63; its type stubs do not yet.
        self.server.add_registered_method_handlers(service, wrapped)  # type: ignore[attr-defined]
