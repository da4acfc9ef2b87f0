"""Who may call a pod: the holders of its token, when it has one.

A pod that listens on the network (`toolmesh runtime --host ...`, a Deployment on a
cluster) would otherwise serve anyone who reaches its port, bypassing the gateway's keys,
scopes and rate limits. With `TOOLMESH_POD_TOKEN` set (pod_env.py), every call must carry
``authorization: Bearer <token>``:

- the Runtime service and reflection answer UNAUTHENTICATED without it: reflection only
  describes the (public) protocol, but an anonymous caller has no use for it either, and
  grpcurl can send the header (``-H 'authorization: Bearer ...'``);
- the standard health service stays open: the kubelet's gRPC probes cannot send metadata,
  and it tells a caller nothing but whether the pod serves;
- /metrics answers 401 without it (telemetry.py); Prometheus sends it from the same Secret.

Pods a gateway starts have no token: they listen only on Unix sockets in a directory
that no other user may enter, which is the stronger check (serving.py).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health

if TYPE_CHECKING:  # generic only in the type stubs
    Handler = grpc.RpcMethodHandler[Any, Any]
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:
    Handler = grpc.RpcMethodHandler
    _Interceptor = grpc.aio.ServerInterceptor

#: Services anyone may call, token or not.
OPEN_SERVICES = frozenset({health.SERVICE_NAME})
AUTHORIZATION = "authorization"
_SCHEME = b"bearer "


def _as_bytes(value: str | bytes) -> bytes:
    # Metadata may hold anything a client put there; surrogatepass encodes every str.
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")


def bearer_matches(header: str | bytes | None, token: str) -> bool:
    """Whether an authorization header value is ``Bearer <token>`` (the scheme in any case).

    Compared in constant time; never raises, whatever bytes the header holds."""
    if header is None or not token:
        return False
    value = _as_bytes(header).strip()
    if value[: len(_SCHEME)].lower() != _SCHEME:
        return False
    return hmac.compare_digest(value[len(_SCHEME) :].strip(), token.encode())


def authorized(metadata: Iterable[tuple[str, str | bytes]] | None, token: str) -> bool:
    """Whether gRPC invocation metadata carries the token (in an `authorization` entry)."""
    return any(key.lower() == AUTHORIZATION and bearer_matches(value, token) for key, value in metadata or ())


def _service(method: str) -> str:
    return method.lstrip("/").partition("/")[0]


async def _refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    await context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        "this pod needs `authorization: Bearer <token>` (its TOOLMESH_POD_TOKEN)",
    )


def _refusal(handler: Handler) -> Handler:
    """A handler of the same shape as `handler` that only refuses."""
    wrap: Callable[..., Handler]
    if handler.request_streaming and handler.response_streaming:
        wrap = grpc.stream_stream_rpc_method_handler
    elif handler.request_streaming:
        wrap = grpc.stream_unary_rpc_method_handler
    elif handler.response_streaming:
        wrap = grpc.unary_stream_rpc_method_handler
    else:
        wrap = grpc.unary_unary_rpc_method_handler
    return wrap(
        _refuse,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class TokenInterceptor(_Interceptor):
    """Refuses every call outside OPEN_SERVICES that lacks the pod's token."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("a TokenInterceptor needs a token")
        self._token = token
        #: One refusing handler per method, made on its first refused call.
        self._refusals: dict[str, Handler] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or _service(method) in OPEN_SERVICES:
            return handler
        metadata = handler_call_details.invocation_metadata
        if authorized(metadata, self._token):
            return handler
        refusal = self._refusals.get(method)
        if refusal is None:
            refusal = self._refusals[method] = _refusal(handler)
        return refusal
