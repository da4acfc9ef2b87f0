"""Requests that do not parse: a client's mistake, answered INVALID_ARGUMENT.

grpc.aio runs the generated deserializer before any servicer code; when it raises (bytes
that are not the request message), grpc answers UNKNOWN and logs a traceback, as if the
server had failed. `RejectUndecodable` gives each unary handler a deserializer that never
raises and a behaviour that refuses what it could not read, in the error shape every
other refusal has (toolmesh.error_shapes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeAlias

import grpc

from toolmesh.errors import InvalidRequest
from toolmesh.protocol import wire

Context = grpc.aio.ServicerContext[Any, Any]
Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"  # generic only in the type stubs


class Undecodable:
    """What a lenient deserializer returns instead of raising."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _lenient(deserialize: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # DecodeError, or whatever a custom deserializer raises
            return Undecodable(str(exc) or type(exc).__name__)

    return decode


def _refusal(method: str, request: Undecodable) -> InvalidRequest:
    return InvalidRequest(
        f"the request to {method} is not a valid message: {request.reason}", param="request"
    )


def _unary_unary(method: str, behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def checked(request: Any, context: Context) -> Any:
        if isinstance(request, Undecodable):
            await wire.abort(context, _refusal(method, request))
        return await behaviour(request, context)

    return checked


def _unary_stream(method: str, behaviour: Callable[..., Any]) -> Callable[..., Any]:
    async def checked(request: Any, context: Context) -> AsyncIterator[Any]:
        if isinstance(request, Undecodable):
            await wire.abort(context, _refusal(method, request))
        async for item in behaviour(request, context):
            yield item

    return checked


class RejectUndecodable:
    """Wraps every unary-request handler (streaming-request ones are left as they are), once,
    when it is registered (wrapping_server.py)."""

    @staticmethod
    def wrap(method: str, handler: Handler) -> Handler:
        if handler.request_streaming or handler.request_deserializer is None:
            return handler
        decode = _lenient(handler.request_deserializer)
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _unary_unary(method, handler.unary_unary), decode, handler.response_serializer
            )
        assert handler.unary_stream is not None  # a unary request: one of the two is set
        return grpc.unary_stream_rpc_method_handler(
            _unary_stream(method, handler.unary_stream), decode, handler.response_serializer
        )
