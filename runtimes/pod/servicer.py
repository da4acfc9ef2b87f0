"""The Runtime gRPC service: converts messages and delegates to the executor."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

import grpc

from toolmesh import tracing
from toolmesh.errors import ToolmeshError
from toolmesh.runtimes.functions.call_events import CallEvent
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.pod import wire
from toolmesh.runtimes.pod.executor import Executor
from toolmesh.v1 import function_pb2, invoke_pb2, runtime_pb2_grpc

Context = grpc.aio.ServicerContext[object, object]


class RuntimeServicer(runtime_pb2_grpc.RuntimeServicer):
    def __init__(self, executor: Executor) -> None:
        self._executor = executor
        registry = executor.registry
        self._listing = wire.list_response(registry.specs(), registry.namespaces)

    async def ListFunctions(
        self, request: function_pb2.ListFunctionsRequest, context: Context
    ) -> function_pb2.ListFunctionsResponse:
        if not request.namespace:
            return self._listing
        registry = self._executor.registry
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
        return wire.result_to_proto(result)

    async def InvokeStream(
        self, request: invoke_pb2.InvokeRequest, context: Context
    ) -> AsyncIterator[invoke_pb2.InvokeStreamResponse]:
        events: collections.deque[CallEvent] | None = None
        woken = asyncio.Event()
        deliver = None
        if request.log_level > 0 or request.progress:
            events = collections.deque()

            def deliver(event: CallEvent) -> None:
                assert events is not None
                events.append(event)
                woken.set()

        call = wire.call_from_proto(request, context.time_remaining(), deliver)
        if tracing.enabled():
            call.trace = tracing.carrier_from(context.invocation_metadata() or ())
        try:
            stream = self._executor.stream(call)
            merged = stream if events is None else _with_events(stream, events, woken)
            async for event in merged:
                for message in wire.stream_messages(event):
                    yield message
        except ToolmeshError as exc:
            await wire.abort(context, exc)


async def _with_events(
    stream: AsyncIterator[list[Content] | Result],
    events: collections.deque[CallEvent],
    woken: asyncio.Event,
) -> AsyncIterator[list[Content] | Result | CallEvent]:
    """The stream's items with the call's events in between, each event before whatever the
    function produced after it. The stream is still pulled one item at a time, so a slow caller
    still pauses the function."""
    pending = asyncio.ensure_future(anext(stream))
    try:
        while True:
            while events:
                yield events.popleft()
            if pending.done():
                try:
                    item = pending.result()
                except StopAsyncIteration:
                    return
                while events:
                    yield events.popleft()
                yield item
                pending = asyncio.ensure_future(anext(stream))
                continue
            woken.clear()
            waking = asyncio.ensure_future(woken.wait())
            await asyncio.wait({pending, waking}, return_when=asyncio.FIRST_COMPLETED)
            waking.cancel()
    finally:
        if not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending
        if isinstance(stream, AsyncGenerator):
            await stream.aclose()
