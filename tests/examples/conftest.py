"""Call the example modules on real in-process pods, the way any gRPC client would."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from toolmesh.protocol.wire import content_from_proto, result_from_proto
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc


def request(function: str, arguments: dict[str, Any]) -> invoke_pb2.InvokeRequest:
    return invoke_pb2.InvokeRequest(function=function, arguments=json.dumps(arguments).encode())


@dataclass
class Client:
    stub: runtime_pb2_grpc.RuntimeStub
    running: Any = None  # the InProcessPod, for tests that look at the executor

    async def call(self, function: str, **arguments: Any) -> Result:
        return result_from_proto(await self.stub.Invoke(request(function, arguments)))

    async def ok(self, function: str, **arguments: Any) -> Any:
        """The structured result of a call that must succeed."""
        result = await self.call(function, **arguments)
        assert not result.is_error, result.text
        return result.structured

    def open_stream(self, function: str, **arguments: Any) -> Any:
        """The raw InvokeStream call, to read message by message or to cancel."""
        return self.stub.InvokeStream(request(function, arguments))

    async def stream(self, function: str, **arguments: Any) -> tuple[list[Content], Result]:
        """The streamed items, in arrival order, and the final result."""
        items: list[Content] = []
        final: Result | None = None
        async for message in self.open_stream(function, **arguments):
            assert final is None, "nothing may follow the result"
            if message.HasField("result"):
                final = result_from_proto(message.result)
            else:
                items.append(content_from_proto(message.content))
        assert final is not None, "the stream ended without a result"
        return items, final


Serve = Callable[..., Awaitable[Client]]


@pytest.fixture
def serve(pod_factory: Callable[..., Awaitable[Any]]) -> Serve:
    """Start a pod for some example modules: ``client = await serve("examples.weather")``."""

    async def start(*modules: str) -> Client:
        running = await pod_factory(*modules, metrics=False)
        return Client(running.stub, running)

    return start


@pytest.fixture
async def connect() -> AsyncIterator[Callable[[str], Client]]:
    """Clients for pods running elsewhere, such as child processes: ``connect(pod.address)``."""
    channels: list[grpc.aio.Channel] = []

    def open_client(address: str) -> Client:
        channels.append(grpc.aio.insecure_channel(address))
        return Client(runtime_pb2_grpc.RuntimeStub(channels[-1]))

    yield open_client
    for channel in channels:
        await channel.close()
