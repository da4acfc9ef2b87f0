"""Faults the pool absorbs, on real processes: pods SIGKILLed under load, a killed or hung
template, and what callers see (counted, not sampled)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.pool.test_replicas import (
    alive,
    client,
    eventually,
    metric,
    ready_pids,
    replicas,
    scrape,
)
from toolmesh import AsyncClient, FunctionTimeout, ToolmeshError, Unavailable

__all__ = ["client"]  # the fixture, shared with test_replicas.py


async def _kill_loop(gateway: Any, every: float, stop: asyncio.Event) -> int:
    """SIGKILL the newest ready pod every `every` seconds; how many were killed."""
    killed = 0
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        pids = ready_pids(gateway)
        if pids and not stop.is_set():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pids[-1], signal.SIGKILL)
                killed += 1
    return killed


async def _caller(invoke: Any, function: str, stop: asyncio.Event, seen: Counter[str]) -> None:
    while not stop.is_set():
        try:
            result = await invoke(function, {"seconds": 0.01})
            seen["ok" if not result.is_error else f"error: {result.text}"] += 1
        except Unavailable as exc:
            named = "died mid-call" in exc.message and exc.retry_after is not None
            seen["unavailable, named" if named else f"unavailable: {exc.message}"] += 1
        except ToolmeshError as exc:
            seen[f"{type(exc).__name__}: {exc.message}"] += 1


@pytest.mark.slow
@pytest.mark.parametrize("max_replicas", [1, 2])
async def test_pods_killed_every_second_under_load_lose_no_idempotent_call(
    gateway_factory: StartGateway, client: Any, max_replicas: int
) -> None:
    gateway = await gateway_factory(
        runtime("tools", "pool_tools", min_replicas=1, max_replicas=max_replicas, target_concurrency=2)
    )
    mesh = client(gateway)
    stop = asyncio.Event()
    idempotent: Counter[str] = Counter()
    once: Counter[str] = Counter()
    callers = [
        *(asyncio.create_task(_caller(mesh.invoke, "wait", stop, idempotent)) for _ in range(3)),
        asyncio.create_task(_caller(mesh.invoke, "once", stop, once)),
    ]
    killer = asyncio.create_task(_kill_loop(gateway, 1.0, stop))
    await asyncio.sleep(6)
    stop.set()
    killed = await killer
    await asyncio.gather(*callers)
    print(f"max_replicas={max_replicas} killed={killed} idempotent={dict(idempotent)} once={dict(once)}")
    assert killed >= 4
    assert set(idempotent) == {"ok"}, idempotent
    assert idempotent["ok"] > 100
    # Calls that are not idempotent fail only when their pod dies under them, saying so.
    assert set(once) <= {"ok", "unavailable, named"}, once
    assert once["unavailable, named"] <= killed
    text = await scrape(gateway)
    assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="killed") == killed
    # Deaths of pods that served calls are not a crash loop.
    assert metric(text, "toolmesh_pod_start_failures_total", runtime="tools") == 0


async def test_a_killed_pod_lived_as_long_as_it_ran_in_the_log(
    gateway_factory: StartGateway, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", min_replicas=1))
    await client(gateway).invoke("wait", {"seconds": 0.3})
    (victim,) = ready_pids(gateway)
    os.kill(victim, signal.SIGKILL)
    # The next call waits for the replacement instead of failing fast.
    result = await client(gateway).invoke("wait", {})
    assert result.structured != victim
    (line,) = [r.getMessage() for r in caplog.records if f"pod {victim} exited" in r.getMessage()]
    lived = float(line.split(" after ")[1].split(" s")[0])
    assert lived >= 0.3, line
    assert "(killed)" in line and "1 calls" in line


@pytest.mark.slow
async def test_a_killed_template_is_restarted_and_calls_are_held_meanwhile(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", min_replicas=1))
    mesh = client(gateway)
    old_template = replicas(gateway).template.process.pid
    (old_pod,) = ready_pids(gateway)
    slow = asyncio.create_task(mesh.invoke("wait", {"seconds": 0.5}))
    await eventually(lambda: replicas(gateway).inflight == 1)
    os.kill(old_template, signal.SIGKILL)
    # Detected at once: readiness drops, and a call made now is held, not refused.
    await eventually(lambda: not replicas(gateway).ready, timeout=1.0)
    began = asyncio.get_running_loop().time()
    held = await mesh.invoke("wait", {})
    print(
        f"a call made as the template died answered after {asyncio.get_running_loop().time() - began:.2f} s"
    )
    assert not held.is_error and held.structured != old_pod
    # The call in flight on the old template's pod finished: its pod drains.
    assert (await slow).structured == old_pod
    assert replicas(gateway).template.process.pid != old_template
    assert replicas(gateway).ready
    text = await scrape(gateway)
    assert metric(text, "toolmesh_template_restarts_total", runtime="tools", reason="killed") == 1
    assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="template") == 1


@pytest.mark.slow
async def test_a_hung_template_is_killed_and_replaced(gateway_factory: StartGateway, client: Any) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", startup_timeout=1.0))
    mesh = client(gateway)
    hung = replicas(gateway).template.process.pid
    os.kill(hung, signal.SIGSTOP)
    try:
        with pytest.raises(Unavailable):
            await mesh.invoke("wait", {})  # no pod can start: held, then a clean 503
        await eventually(lambda: replicas(gateway).template.process.pid != hung, timeout=5.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hung, signal.SIGCONT)
    assert not (await mesh.invoke("wait", {})).is_error
    text = await scrape(gateway)
    assert metric(text, "toolmesh_template_restarts_total", runtime="tools", reason="hung") == 1


async def test_readiness_is_per_runtime_and_one_down_runtime_keeps_the_gateway_in_service(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools"), runtime("crashy", "crashing_tools"))
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        async with AsyncClient(gateway.url) as mesh:
            with pytest.raises(Unavailable):
                await mesh.invoke("hello", {})  # its pods die at birth: backing off
        plain = await http.get("/readyz")
        assert plain.status_code == 200, "what a Kubernetes probe reads keeps the gateway in its Service"
        assert plain.json() == {"ready": False, "runtimes": {"tools": True, "crashy": False}}
        assert (await http.get("/readyz", params={"strict": "true"})).status_code == 503
        assert (await http.get("/readyz", params={"runtime": "tools"})).status_code == 200
        down = await http.get("/readyz", params={"runtime": "crashy"})
        assert down.status_code == 503 and down.json()["runtime"] == "crashy"
        unknown = await http.get("/readyz", params={"runtime": "nope"})
        assert unknown.status_code == 404 and "nope" in unknown.json()["error"]["message"]
        assert (await http.get("/readyz", params={"strict": "maybe"})).status_code == 400
        assert (await http.get("/healthz")).json() == {"status": "ok"}


async def test_a_function_that_kills_its_pod_does_not_deny_the_runtimes_other_functions(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", "dying_tools"))
    mesh = client(gateway)
    for _ in range(5):
        with pytest.raises(Unavailable) as caught:
            await mesh.invoke("die", {})
        assert "died mid-call" in caught.value.message
        assert not (await mesh.invoke("wait", {})).is_error
    text = await scrape(gateway)
    assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="crashed") == 5
    assert metric(text, "toolmesh_pod_start_failures_total", runtime="tools") == 0


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["socket", "grpc"])
async def test_a_frozen_pod_is_found_by_its_pings_killed_and_replaced(
    gateway_factory: StartGateway, client: Any, transport: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "pool_tools", min_replicas=1, transport=transport))
    mesh = client(gateway)
    (frozen,) = ready_pids(gateway)
    os.kill(frozen, signal.SIGSTOP)
    try:
        # Held on the frozen pod (or refused by it, over gRPC), then served by another pod;
        # the frozen one, silent to pings, is killed either way.
        started = asyncio.get_running_loop().time()
        answer = await mesh.invoke("wait", {})
        waited = asyncio.get_running_loop().time() - started
        assert answer.structured != frozen and waited < 10, waited
        await eventually(lambda: not alive(frozen))
        text = await scrape(gateway)
        assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="unresponsive") == 1
        assert metric(text, "toolmesh_pod_start_failures_total", runtime="tools") == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(frozen, signal.SIGCONT)


@pytest.mark.slow
async def test_a_function_that_blocks_its_pods_event_loop_past_its_timeout_loses_the_pod_not_the_runtime(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "dying_tools", "pool_tools", min_replicas=1, timeout=2))
    mesh = client(gateway)
    (blocked,) = ready_pids(gateway)
    with pytest.raises(FunctionTimeout, match="block_loop did not finish within 2 s: its async code blocked"):
        await mesh.invoke("block_loop", {"seconds": 20})
    assert (await mesh.invoke("wait", {})).structured != blocked
    text = await scrape(gateway)
    assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="blocked") == 1
