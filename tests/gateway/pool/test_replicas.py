"""The serverless pool on real template processes and forked pods: scale from zero, bursts,
scale to zero, the activator's limits, crashed pods, crash loops and metrics."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh import AsyncClient, FunctionTimeout, Unavailable
from toolmesh.gateway.pool.replicas import ReplicaSet
from toolmesh.gateway.pool.runtime_pool import Pool
from toolmesh.gateway.pool.socket_client import SocketClient
from toolmesh.gateway.server import Gateway


def replicas(gateway: Gateway, name: str = "tools") -> ReplicaSet:
    assert isinstance(gateway.pool, Pool)
    return gateway.pool.sets[name]


def ready_pids(gateway: Gateway, name: str = "tools") -> list[int]:
    return [r.pid for r in replicas(gateway, name).replicas if r.state == "ready"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0) until its parent (the template) reaps it; reaped between
    # the two looks, its /proc entry is gone (or goes while it is read).
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


async def eventually(condition: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one series in a Prometheus exposition."""
    selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{name}{{") or line.startswith(f"{name} "):
            series, value = line.rsplit(" ", 1)
            found = dict(re.findall(r'(\w+)="([^"]*)"', series))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(value)
    raise AssertionError(f"no series {name}{{{selector}}}")


@pytest.fixture
async def client() -> AsyncIterator[Any]:
    clients: list[AsyncClient] = []

    def make(gateway: Gateway) -> AsyncClient:
        clients.append(AsyncClient(gateway.url))
        return clients[-1]

    yield make
    for made in clients:
        await made.close()


async def scrape(gateway: Gateway) -> str:
    async with httpx.AsyncClient() as http:
        return (await http.get(f"{gateway.url}/metrics")).text


async def test_scales_from_zero_on_the_first_call_and_counts_the_cold_start(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools"))
    assert replicas(gateway).replicas == [], "min_replicas = 0: nothing runs before a call"
    text = await scrape(gateway)
    assert metric(text, "toolmesh_cold_starts_total", runtime="tools") == 0
    assert metric(text, "toolmesh_replicas", runtime="tools", state="ready") == 0

    result = await client(gateway).invoke("wait", {})
    assert result.structured in ready_pids(gateway)

    text = await scrape(gateway)
    assert metric(text, "toolmesh_cold_starts_total", runtime="tools") == 1
    assert metric(text, "toolmesh_cold_start_seconds_count", runtime="tools") == 1
    assert metric(text, "toolmesh_replicas", runtime="tools", state="ready") == 1
    assert metric(text, "toolmesh_queue_wait_seconds_count", runtime="tools") == 1
    # A warm call is not a cold start and is not held.
    await client(gateway).invoke("wait", {})
    text = await scrape(gateway)
    assert metric(text, "toolmesh_cold_starts_total", runtime="tools") == 1
    assert metric(text, "toolmesh_queue_wait_seconds_count", runtime="tools") == 1


async def test_a_burst_scales_up_to_max_replicas_and_no_further(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", target_concurrency=1, max_replicas=3))
    seen: list[int] = []

    async def watch() -> None:
        while True:
            counts = replicas(gateway).replica_counts()
            seen.append(counts["ready"] + counts["starting"])
            await asyncio.sleep(0.005)

    async def burst() -> set[int]:
        results = await asyncio.gather(*(client(gateway).invoke("wait", {"seconds": 0.4}) for _ in range(9)))
        assert all(not r.is_error for r in results)
        return {r.structured for r in results}

    watcher = asyncio.create_task(watch())
    await burst()
    assert len(ready_pids(gateway)) == 3
    # With every pod up, a second burst is spread over all of them (least in flight first).
    assert len(await burst()) == 3
    watcher.cancel()
    assert max(seen) == 3
    text = await scrape(gateway)
    assert metric(text, "toolmesh_inflight_requests", runtime="tools") == 0


async def test_idle_pods_scale_to_zero_and_stop(gateway_factory: StartGateway, client: Any) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", idle_timeout=0.3))
    pid = (await client(gateway).invoke("wait", {})).structured
    assert alive(pid)
    await eventually(lambda: not replicas(gateway).replicas and not alive(pid))
    # And the next call starts a new one.
    assert (await client(gateway).invoke("wait", {})).structured != pid


async def test_min_replicas_run_from_the_start_and_never_idle_away(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(
        runtime("tools", "pool_tools", min_replicas=1, idle_timeout=0.1, target_concurrency=1)
    )
    first = ready_pids(gateway)
    assert len(first) == 1
    await asyncio.gather(*(client(gateway).invoke("wait", {"seconds": 0.3}) for _ in range(3)))
    await eventually(lambda: len(replicas(gateway).replicas) == 1)
    await asyncio.sleep(0.3)
    assert ready_pids(gateway) == first, "the oldest pod stays; min_replicas is kept"


async def test_a_full_queue_turns_calls_away_with_503(gateway_factory: StartGateway, client: Any) -> None:
    gateway = await gateway_factory(
        runtime("tools", "pool_tools", max_replicas=1, max_inflight=1, max_queue=1, min_replicas=1)
    )
    busy = asyncio.create_task(client(gateway).invoke("wait", {"seconds": 0.5}))
    await eventually(lambda: replicas(gateway).inflight == 1)
    held = asyncio.create_task(client(gateway).invoke("wait", {}))
    await eventually(lambda: replicas(gateway).pending == 1)
    assert metric(await scrape(gateway), "toolmesh_pending_requests", runtime="tools") == 1
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{gateway.url}/v1/functions/wait/invoke", json={})
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["error"]["code"] == "overloaded"
    assert "1 calls waiting for a pod" in answer.json()["error"]["message"]
    # Nothing is lost: the held call is served once the pod frees up.
    assert not (await busy).is_error
    assert not (await held).is_error


async def test_a_pod_that_cannot_start_in_time_gives_a_clean_503(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", startup_timeout=0.001))
    with pytest.raises(Unavailable) as caught:
        await client(gateway).invoke("wait", {})
    assert caught.value.retry_after is not None and caught.value.retry_after > 0
    # The late pod is not left behind.
    await eventually(lambda: not replicas(gateway).replicas)


async def test_a_killed_pod_is_replaced_and_idempotent_calls_still_succeed(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(
        runtime("tools", "pool_tools", min_replicas=2, max_replicas=2, target_concurrency=8)
    )
    victim, survivor = ready_pids(gateway)
    calls = [asyncio.create_task(client(gateway).invoke("wait", {"seconds": 0.3})) for _ in range(12)]
    await eventually(lambda: replicas(gateway).inflight == 12)
    os.kill(victim, signal.SIGKILL)
    results = await asyncio.gather(*calls)
    assert all(not r.is_error for r in results), [r.text for r in results if r.is_error]
    assert victim not in {r.structured for r in results}
    # min_replicas asks for a replacement.
    await eventually(lambda: len(ready_pids(gateway)) == 2 and victim not in ready_pids(gateway))
    assert survivor in ready_pids(gateway)
    assert metric(await scrape(gateway), "toolmesh_pod_restarts_total", runtime="tools", reason="killed") == 1


async def test_calls_that_are_not_idempotent_fail_retryably_when_their_pod_dies(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", min_replicas=1))
    (victim,) = ready_pids(gateway)
    call = asyncio.create_task(client(gateway).invoke("once", {"seconds": 5}))
    await eventually(lambda: replicas(gateway).inflight == 1)
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(Unavailable) as caught:
        await call
    assert caught.value.retryable


async def test_a_crash_loop_backs_off_and_fails_fast(gateway_factory: StartGateway, client: Any) -> None:
    gateway = await gateway_factory(runtime("crashy", "crashing_tools"))
    with pytest.raises(Unavailable) as caught:
        await client(gateway).invoke("hello", {})
    assert "failing to start pods" in caught.value.message or "exited with status 3" in caught.value.message
    # While backing off, calls are refused at once with the time to wait.
    with pytest.raises(Unavailable) as again:
        await client(gateway).invoke("hello", {})
    assert "failing to start pods" in again.value.message
    assert again.value.retry_after is not None and again.value.retry_after > 0
    async with httpx.AsyncClient() as http:
        ready = await http.get(f"{gateway.url}/readyz", params={"strict": "true"})
    assert ready.status_code == 503
    assert ready.json()["runtimes"] == {"crashy": False}
    assert metric(await scrape(gateway), "toolmesh_pod_start_failures_total", runtime="crashy") >= 1


async def test_stopping_the_gateway_stops_templates_and_pods(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", min_replicas=2))
    pids = [*ready_pids(gateway), replicas(gateway).template.process.pid]
    await gateway.stop(grace=0)
    await eventually(lambda: not any(alive(pid) for pid in pids))


@pytest.mark.parametrize("transport", ["socket", "grpc"])
async def test_both_transports_to_pods_serve_calls_and_their_failures(
    gateway_factory: StartGateway, client: Any, transport: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", "sample_tools", transport=transport))
    (await client(gateway).invoke("wait", {}))
    (replica,) = replicas(gateway).replicas
    assert isinstance(replica.transport, SocketClient) == (transport == "socket")
    failed = await client(gateway).invoke("fail", {"message": "broken"})
    assert failed.is_error and "broken" in failed.text
    with pytest.raises(FunctionTimeout):
        await client(gateway).invoke("sleepy", {"seconds": 5})


async def test_a_singleton_keeps_one_pod_from_start_and_queues_a_burst_on_it(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(
        runtime(
            "tools",
            "pool_tools",
            singleton=True,
            max_inflight=2,
            target_concurrency=1,
            idle_timeout=0.1,
            startup_timeout=1.0,
        )
    )
    assert len(ready_pids(gateway)) == 1, "started with the gateway"
    (pid,) = ready_pids(gateway)
    # Six calls of 0.6 s, two at a time: the last two wait ~1.2 s for the one pod, past the
    # startup_timeout, which bounds a wait for a pod that is starting, not for a busy singleton.
    results = await asyncio.gather(*(client(gateway).invoke("wait", {"seconds": 0.6}) for _ in range(6)))
    assert all(not r.is_error for r in results), [r.error for r in results]
    assert {r.structured for r in results} == {pid}
    await asyncio.sleep(0.5)
    assert ready_pids(gateway) == [pid], "never scaled to zero"
