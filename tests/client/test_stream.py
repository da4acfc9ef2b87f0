"""`Client.stream` and `AsyncClient.stream` (server-sent events, read by client/sse_parser.py) against a
real gateway and pod, checked against `GrpcClient.stream` on the same calls."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.gateway.conftest import runtime
from toolmesh import (
    AsyncClient,
    Client,
    FunctionNotFound,
    GrpcClient,
    InvalidArguments,
    Json,
    Result,
    Text,
    Unavailable,
)
from toolmesh.client.sse_parser import Event, EventParser
from toolmesh.config import GatewayConfig, MeshConfig
from toolmesh.gateway.server import Gateway, start_gateway
from toolmesh.runtimes.functions.results import Content

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway() -> AsyncIterator[Gateway]:
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0),
        runtimes=(runtime("tools", "sample_tools", "stream_tools"),),
    )
    started = await start_gateway(config, environ={})
    yield started
    await started.stop(grace=0)


async def http_stream(
    gateway: Gateway, kind: str, name: str, arguments: dict[str, object]
) -> list[Content | Result]:
    """Everything `stream` yields, from the async client or from the sync one in a thread."""
    if kind == "async":
        async with AsyncClient(gateway.url) as client:
            return [event async for event in client.stream(name, arguments)]

    def run() -> list[Content | Result]:
        with Client(gateway.url) as client:
            return list(client.stream(name, arguments))

    return await asyncio.to_thread(run)


async def grpc_stream(gateway: Gateway, name: str, arguments: dict[str, object]) -> list[Content | Result]:
    async with GrpcClient(f"127.0.0.1:{gateway.grpc_port}") as native:
        return [event async for event in native.stream(name, arguments)]


def without_timing(events: list[Content | Result]) -> list[Content | Result]:
    return [
        Result(e.content, e.is_error, e.structured_json, e.error) if isinstance(e, Result) else e
        for e in events
    ]


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_stream_yields_what_the_grpc_client_yields(gateway: Gateway, kind: str) -> None:
    for name, arguments in [("count", {"n": 3}), ("ticks", {"n": 2}), ("add", {"a": 1}), ("breaks", {})]:
        over_http = await http_stream(gateway, kind, name, arguments)
        over_grpc = await grpc_stream(gateway, name, arguments)
        assert without_timing(over_http) == without_timing(over_grpc), name
    ticks = await http_stream(gateway, kind, "ticks", {"n": 2})
    assert ticks[:-1] == [Json(b'{"tick":0}'), Json(b'{"tick":1}')]
    final = ticks[-1]
    assert isinstance(final, Result) and not final.is_error and final.content == []
    plain = await http_stream(gateway, kind, "add", {"a": 1, "b": 2})
    assert len(plain) == 1 and isinstance(plain[0], Result) and plain[0].structured == 3
    broken = await http_stream(gateway, kind, "breaks", {"items": 1})
    assert broken[0] == Text("item 0")
    assert isinstance(broken[-1], Result) and broken[-1].error is not None
    assert broken[-1].error.code == "function_error"


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_refusals_raise_before_any_item_and_failures_after(gateway: Gateway, kind: str) -> None:
    with pytest.raises(FunctionNotFound):
        await http_stream(gateway, kind, "nope", {})
    with pytest.raises(InvalidArguments):
        await http_stream(gateway, kind, "ticks", {"n": "many"})
    received: list[Content | Result] = []

    async def collect() -> None:
        async with AsyncClient(gateway.url) as client:
            async for event in client.stream("dies", {}):
                received.append(event)

    if kind == "async":
        with pytest.raises(Unavailable):
            await collect()
        assert received == [Text("first")]
    else:

        def run() -> None:
            with Client(gateway.url) as client:
                for event in client.stream("dies", {}):
                    received.append(event)

        with pytest.raises(Unavailable):
            await asyncio.to_thread(run)
        assert received == [Text("first")]


async def test_leaving_early_hangs_up_and_the_client_still_works(gateway: Gateway) -> None:
    async with AsyncClient(gateway.url) as client:
        async with contextlib.aclosing(client.stream("ticks", {"n": 1000, "delay": 0.01})) as endless:
            assert await anext(endless) == Json(b'{"tick":0}')
        assert (await client.invoke("add", {"a": 1})).structured == 2


async def test_event_parser_follows_the_sse_format() -> None:
    parser = EventParser()
    lines = [": a comment", "event: content", "data: {", 'data:  "a": 1}', "id: 7", "", "", "data: x", ""]
    events = [event for line in lines if (event := parser.feed(line)) is not None]
    assert events == [Event("content", '{\n "a": 1}'), Event("message", "x")]
