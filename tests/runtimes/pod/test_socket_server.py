"""Unary calls over a pod's Unix socket: the gateway's client against a real in-process pod."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolmesh.errors import FunctionNotFound, FunctionTimeout, Overloaded, Unavailable
from toolmesh.gateway.pool.socket_client import SocketClient
from toolmesh.protocol import wire
from toolmesh.protocol.calls import Call
from toolmesh.protocol.frames import HEADER, INVOKE, RESULT, frame
from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.pod.serving import Pod
from toolmesh.runtimes.pod.settings import PodSettings
from toolmesh.runtimes.pod.socket_server import PodConnection
from toolmesh.v1 import invoke_pb2

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


class _Answering:
    """An executor that answers every call at once, with its request id."""

    async def invoke(self, call: Call) -> Result:
        return Result(request_id=call.request_id)


async def test_answers_finished_in_one_step_leave_together_and_count_as_unsent_until_then() -> None:
    loop = asyncio.get_running_loop()
    gateway_end, pod_end = socket.socketpair()
    _, connection = await loop.connect_accepted_socket(
        lambda: PodConnection(_Answering(), lambda _: None),  # type: ignore[arg-type]
        pod_end,
    )
    assert connection.transport is not None
    writes: list[bytes] = []
    write = connection.transport.write
    connection.transport.write = lambda data: (writes.append(data), write(data))[-1]  # type: ignore[method-assign]
    reader, writer = await asyncio.open_connection(sock=gateway_end)
    ids = [f"call-{n}" for n in range(1, 4)]
    writer.write(
        b"".join(
            frame(INVOKE, n, wire.call_to_proto(call("echo", request_id=rid)).SerializeToString())
            for n, rid in enumerate(ids, 1)
        )
    )
    while len(connection.unsent) < len(ids):  # answered, kept for the end of their loop step
        assert not writes
        await asyncio.sleep(0)
    assert connection.unsent == ids
    answers = []
    for _ in ids:
        length, kind, call_id, _ = HEADER.unpack(await reader.readexactly(HEADER.size))
        payload = await reader.readexactly(length)
        answers.append((kind, call_id, invoke_pb2.InvokeResponse.FromString(payload).request_id))
    assert answers == [(RESULT, n, rid) for n, rid in enumerate(ids, 1)]
    assert len(writes) == 1, "one write for the three answers"
    assert connection.unsent == [], "the socket's buffer emptied: every answer left"
    writer.close()
    connection.close()
