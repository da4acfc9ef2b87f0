"""The Runtime gRPC service: converts messages and delegates to the executor."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

import toolmesh.tracing as tracing
from toolmesh.errors import ToolmeshError
from toolmesh.protocol import wire
from toolmesh.protocol.listing_trailer import PodListing, this_pod
from toolmesh.runtimes.functions.call_events import Interleaving
from toolmesh.runtimes.pod.executor import Executor
from toolmesh.v1 import function_pb2, invoke_pb2, runtime_pb2_grpc

Context = grpc.aio.ServicerContext[object, object]


class RuntimeServicer(runtime_pb2_grpc.RuntimeServicer):
    def __init__(self, executor: Executor) -> None:
        self._executor = executor
        registry = executor.registry
        self._listing = wire.list_response(registry.specs(), registry.namespaces)
        #: The registry's revision `_listing` was made from (its functions may change: registry.py).
        self._revision = registry.revision
        self._pod = this_pod()

    def _say_listing(self, context: Context) -> None:
        """Once the pod's functions changed on their own, every answer says so (listing_trailer.py)."""
        revision = self._executor.registry.revision
        if revision:
            context.set_trailing_metadata((PodListing(self._pod, revision).encode(),))

    async def ListFunctions(
        self, request: function_pb2.ListFunctionsRequest, context: Context
    ) -> function_pb2.ListFunctionsResponse:
        registry = self._executor.registry
        self._say_listing(context)
        if not request.namespace:
            if registry.revision != self._revision:
                self._listing = wire.list_response(registry.specs(), registry.namespaces)
                self._revision = registry.revision
            return self._listing
        namespaces = [n for n in registry.namespaces if n.name == request.namespace]
        return wire.list_response(registry.specs(request.namespace), namespaces)

    async def Invoke(self, request: invoke_pb2.InvokeRequest, context: Context) -> invoke_pb2.InvokeResponse:
        call = wire.call_from_proto(request, context.time_remaining())
        if tracing.enabled():
            call.trace = tracing.carrier_from(context.invocation_metadata() or ())
        try:
            result = await self._executor.invoke(call)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise  # abort() raises; this keeps type checkers informed
        self._say_listing(context)
        return wire.result_to_proto(result)

    async def InvokeStream(
        self, request: invoke_pb2.InvokeRequest, context: Context
    ) -> AsyncIterator[invoke_pb2.InvokeStreamResponse]:
        wanted = request.log_level > 0 or request.progress
        interleaving = Interleaving(request.log_level, request.progress) if wanted else None
        deliver = interleaving.listener.deliver if interleaving is not None else None
        call = wire.call_from_proto(request, context.time_remaining(), deliver)
        if tracing.enabled():
            call.trace = tracing.carrier_from(context.invocation_metadata() or ())
        try:
            stream = self._executor.stream(call)
            merged = stream if interleaving is None else interleaving.merge(stream)
            async for event in merged:
                for message in wire.stream_messages(event):
                    yield message
            self._say_listing(context)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
