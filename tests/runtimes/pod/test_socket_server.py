"""Unary calls over a pod's Unix socket: the gateway's client against a real in-process pod."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolmesh.errors import FunctionNotFound, FunctionTimeout, Overloaded, Unavailable
from toolmesh.gateway.pool.socket_client import SocketClient
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.pod.serving import Pod
from toolmesh.runtimes.pod.settings import PodSettings

LIMIT = 8


@pytest.fixture
async def pod(tmp_path: Path) -> AsyncIterator[Pod]:
    settings = PodSettings(
        modules=("sample_tools",),
        port=0,
        metrics_port=None,
        drain_grace=2.0,
        socket_path=str(tmp_path / "pod.sock"),
        max_inflight=LIMIT,
    )
    pod = Pod(settings, Registry.from_modules(settings.modules))
    await pod.start()
    yield pod
    await pod.stop(grace=0)


@pytest.fixture
async def client(pod: Pod) -> AsyncIterator[SocketClient]:
    assert pod.settings.socket_path is not None
    client = SocketClient("tools", pod.settings.socket_path)
    yield client
    await client.close()


def call(function: str, arguments: object = None, **fields: object) -> Call:
    return Call(function, json.dumps(arguments or {}).encode(), **fields)  # type: ignore[arg-type]


async def test_results_and_function_errors_come_back_as_results(client: SocketClient) -> None:
    result = await client.invoke(call("add", {"a": 2, "b": 3}, request_id="r-1"), timeout=5)
    assert (result.structured, result.request_id, result.is_error) == (5, "r-1", False)
    failed = await client.invoke(call("fail", {"message": "no"}), timeout=5)
    assert failed.is_error and failed.error is not None and "no" in failed.error.message
    invalid = await client.invoke(call("add", {"a": "x"}), timeout=5)
    assert invalid.error is not None and invalid.error.code == "invalid_arguments"


async def test_many_calls_share_one_connection(client: SocketClient) -> None:
    results = await asyncio.gather(*(client.invoke(call("echo", {"text": str(i)}), 5) for i in range(LIMIT)))
    assert [r.text for r in results] == [str(i) for i in range(LIMIT)]


async def test_calls_turned_away_raise_the_exact_error(client: SocketClient, pod: Pod) -> None:
    with pytest.raises(FunctionNotFound, match="did you mean 'echo'"):
        await client.invoke(call("ecko"), timeout=5)
    busy = [asyncio.create_task(client.invoke(call("block", {"seconds": 1}), 5)) for _ in range(LIMIT)]
    await asyncio.sleep(0.1)
    with pytest.raises(Overloaded) as overloaded:
        await client.invoke(call("noop"), timeout=5)
    assert overloaded.value.retry_after == 1.0
    for task in busy:
        task.cancel()


async def test_the_callers_deadline_is_enforced_by_the_pod(client: SocketClient) -> None:
    with pytest.raises(FunctionTimeout, match="caller's deadline"):
        await client.invoke(call("block", {"seconds": 5}), timeout=0.2)


async def test_a_caller_that_gives_up_cancels_the_work(client: SocketClient, pod: Pod) -> None:
    assert pod.executor is not None
    task = asyncio.create_task(client.invoke(call("block", {"seconds": 5}), timeout=10))
    await asyncio.sleep(0.1)
    assert pod.executor.inflight == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if pod.executor.inflight == 0:
            break
        await asyncio.sleep(0.01)
    assert pod.executor.inflight == 0


async def test_a_draining_pod_refuses_new_calls_as_safe_to_retry(client: SocketClient, pod: Pod) -> None:
    assert pod.executor is not None
    await client.invoke(call("noop"), timeout=5)  # connected before the drain
    draining = asyncio.create_task(pod.executor.drain(1.0))
    with pytest.raises(Unavailable) as refused:
        await client.invoke(call("noop"), timeout=5)
    assert refused.value.details.get("refused") is True
    await draining


async def test_a_pod_that_goes_away_fails_its_calls_retryably(client: SocketClient, pod: Pod) -> None:
    task = asyncio.create_task(client.invoke(call("block", {"seconds": 5}), timeout=10))
    await asyncio.sleep(0.1)
    await pod.stop(grace=0)
    with pytest.raises(Unavailable) as lost:
        await task
    assert lost.value.retryable
    with pytest.raises(Unavailable, match="cannot reach a pod"):
        await client.invoke(call("noop"), timeout=5)
