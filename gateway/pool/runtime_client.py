"""The gateway's gRPC client for one runtime pod (or a set of them behind one address)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

import toolmesh.tracing as tracing
from toolmesh.error_shapes import GRPC_CODE_KEY, from_rpc_error
from toolmesh.errors import PermissionDenied, ResourceExhausted, ToolmeshError, Unauthenticated, Unavailable
from toolmesh.protocol import wire
from toolmesh.protocol.calls import Call
from toolmesh.protocol.channel import CHANNEL_OPTIONS
from toolmesh.protocol.defaults import WIRE_LIMIT_BYTES
from toolmesh.protocol.listing_trailer import PodListing, listing_in
from toolmesh.runtimes.functions.results import Content, ErrorInfo, Result, content_bytes
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec
from toolmesh.v1 import function_pb2, runtime_pb2_grpc

#: For a runtime behind many addresses (a headless Service, an `ipv4:a,b,c` list): spread
#: calls round robin over the pods that are up, skip pods whose health says NOT_SERVING
#: (draining), and look the name up again at most every second when pods come and go.
BALANCED_OPTIONS: list[tuple[str, int | str]] = [
    *CHANNEL_OPTIONS,
    ("grpc.dns_min_time_between_resolutions_ms", 1000),
    (
        "grpc.service_config",
        json.dumps(
            {
                "loadBalancingConfig": [{"round_robin": {}}],
                "healthCheckConfig": {"serviceName": "toolmesh.v1.Runtime"},
            }
        ),
    ),
]


class PodUnreachable(Unavailable):
    """The road to a pod failed (refused, reset, closed), as opposed to the pod answering with
    an error of its own. Raised by the pool's clients and caught by the pool, which tells the
    caller whether the call may have run (see replicas.py); never reaches a caller as such."""


def _translate(exc: grpc.aio.AioRpcError, peer: str) -> ToolmeshError:
    error = from_rpc_error(exc, peer)
    if isinstance(error, Unauthenticated | PermissionDenied):
        # The pod refused the gateway, not the caller: a caller's 401 would send them to check
        # their own key. It is the operator's to fix, so the runtime is simply unavailable.
        return Unavailable(f"{peer} refused the gateway's token; check its [runtimes] token_env")
    metadata: Any = exc.trailing_metadata() or ()
    answered = any(key == GRPC_CODE_KEY for key, _ in metadata)
    if type(error) is Unavailable and not answered:
        return PodUnreachable(error.message, retry_after=error.retry_after)
    return error


class RuntimeClient:
    """Calls one runtime over gRPC and speaks toolmesh's core types, not protobuf."""

    def __init__(self, name: str, address: str, *, balanced: bool = False, token: str = "") -> None:
        """`token`: what the pods require (``authorization: Bearer <token>``), if anything."""
        self.name = name
        self.address = address
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        options = BALANCED_OPTIONS if balanced else CHANNEL_OPTIONS
        self.channel = grpc.aio.insecure_channel(address, options=options)
        self._stub = runtime_pb2_grpc.RuntimeStub(self.channel)
        self._health = health_pb2_grpc.HealthStub(self.channel)
        #: Hears the `listing` trailer of each call's answer (listing_trailer.py), when set: the
        #: trailers are read only then, so that the pods the gateway forks cost nothing more.
        self.on_listing: Callable[[PodListing | None], None] | None = None

    async def list_functions(self, timeout: float = 10.0) -> tuple[list[FunctionSpec], list[NamespaceSpec]]:
        specs, namespaces, _ = await self.listing(timeout)
        return specs, namespaces

    async def listing(
        self, timeout: float = 10.0
    ) -> tuple[list[FunctionSpec], list[NamespaceSpec], PodListing | None]:
        """The functions of the pod that answered, and its `listing` trailer (None: it serves
        what it started with)."""
        try:
            call = self._stub.ListFunctions(
                function_pb2.ListFunctionsRequest(),
                timeout=timeout,
                wait_for_ready=True,
                metadata=self._metadata,
            )
            reply = await call
            trailer = listing_in(await call.trailing_metadata())
        except grpc.aio.AioRpcError as exc:
            raise _translate(exc, f"runtime {self.name!r}") from None
        specs = [wire.spec_from_proto(message) for message in reply.functions]
        namespaces = [NamespaceSpec(n.name, n.description) for n in reply.namespaces]
        return specs, namespaces, trailer

    async def ping(self, timeout: float) -> bool:
        """Whether the pod answers the standard health check within `timeout` seconds (serving
        or draining: either way its event loop runs)."""
        try:
            await self._health.Check(
                health_pb2.HealthCheckRequest(), timeout=timeout, metadata=self._metadata
            )
        except grpc.aio.AioRpcError:
            return False
        return True

    def _with_trace(self, call: Call) -> tuple[tuple[str, str], ...] | None:
        """The call's metadata: the token, and the trace context when the call has one."""
        if not call.trace:
            return self._metadata
        return (*(self._metadata or ()), *tracing.as_carrier(call.trace))

    async def invoke(self, call: Call, timeout: float, *, wait_for_ready: bool = False) -> Result:
        if call.events is not None:
            # Unary Invoke has no room for events: a call that wants them streams, and its items
            # are gathered into the result as Invoke would.
            return await self._gathered(call, timeout, wait_for_ready)
        try:
            answer = self._stub.Invoke(
                wire.call_to_proto(call),
                timeout=timeout,
                wait_for_ready=wait_for_ready,
                metadata=self._with_trace(call),
            )
            reply = await answer
            if self.on_listing is not None:
                self.on_listing(listing_in(await answer.trailing_metadata()))
        except grpc.aio.AioRpcError as exc:
            raise _translate(exc, f"runtime {self.name!r}") from None
        return wire.result_from_proto(reply)

    async def stream(
        self, call: Call, timeout: float, *, wait_for_ready: bool = False
    ) -> AsyncIterator[list[Content] | Result]:
        try:
            request = wire.call_to_proto(call)
            answer = self._stub.InvokeStream(
                request, timeout=timeout, wait_for_ready=wait_for_ready, metadata=self._with_trace(call)
            )
            async for event in answer:
                kind = event.WhichOneof("event")
                if kind == "content":
                    yield [wire.content_from_proto(event.content)]
                elif kind == "call_event":
                    if call.events is not None:
                        call.events.deliver(wire.event_from_proto(event.call_event))
                else:
                    if self.on_listing is not None:
                        # The result is the stream's last message: its trailers follow at once.
                        self.on_listing(listing_in(await answer.trailing_metadata()))
                    yield wire.result_from_proto(event.result)
        except grpc.aio.AioRpcError as exc:
            raise _translate(exc, f"runtime {self.name!r}") from None

    async def _gathered(self, call: Call, timeout: float, wait_for_ready: bool) -> Result:
        items: list[Content] = []
        size = 0
        async for event in self.stream(call, timeout, wait_for_ready=wait_for_ready):
            if isinstance(event, Result):
                event.content = items + event.content
                return event
            size += content_bytes(event)
            if size > WIRE_LIMIT_BYTES:
                # What a unary result could hold; a generator's items are limited one by one only.
                error = ResourceExhausted(f"the items passed {WIRE_LIMIT_BYTES} bytes in all")
                return Result.failure(ErrorInfo.from_exception(error))
            items += event
        raise Unavailable(f"runtime {self.name!r} ended a stream without its result")

    async def close(self) -> None:
        await self.channel.close(grace=None)
