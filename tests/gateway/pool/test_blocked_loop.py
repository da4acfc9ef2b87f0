"""Issue #28: an async function that blocks its pod's event loop, on real pods and a real gateway.

The pod stays (it is alive: a thread answers its liveness pings) until the blocking call
passes its own time limit; the call is named in the pod's log and metrics; the other calls
on the pod wait, new ones go to another pod; past the limit the blocking call gets a
timeout that says what it did, and the pod is replaced."""

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
from tests.gateway.pool.test_replicas import alive, client, eventually, metric, ready_pids, replicas, scrape
from toolmesh import FunctionTimeout, ToolmeshError, Unavailable

__all__ = ["client"]  # the fixture, shared with test_replicas.py

BLOCK_SECONDS = 5.0


async def _call(mesh: Any, function: str, seconds: float, seen: Counter[str], pids: list[int]) -> None:
    try:
        result = await mesh.invoke(function, {"seconds": seconds})
    except ToolmeshError as exc:
        seen[f"{function}: {type(exc).__name__}: {exc.message}"] += 1
        return
    seen["ok" if not result.is_error else f"{function}: error {result.text}"] += 1
    pids.append(result.structured)


async def _pod_metrics(gateway: Any, pid: int) -> str:
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"{gateway.url}/v1/metrics/pods/tools/{pid}")
    assert answer.status_code == 200, answer.text
    return answer.text


@pytest.mark.slow
async def test_a_loop_blocked_for_5_s_fails_no_call_of_other_functions_and_is_named(
    gateway_factory: StartGateway, client: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway = await gateway_factory(runtime("tools", "loop_tools", min_replicas=1, max_replicas=2))
    mesh = client(gateway)
    (blocked,) = ready_pids(gateway)
    blocking = asyncio.ensure_future(
        mesh.invoke("blocker", {"seconds": BLOCK_SECONDS}, request_id="blocked-request-1")
    )
    await asyncio.sleep(0.2)  # the blocker reaches the pod first and holds its loop
    seen: Counter[str] = Counter()
    pids: list[int] = []
    calls = []
    # Both an idempotent and a non-idempotent function, every 100 ms for the whole block.
    for _ in range(int(BLOCK_SECONDS * 10) + 5):
        for function in ("lookup", "append"):
            calls.append(asyncio.ensure_future(_call(mesh, function, 0.05, seen, pids)))
        await asyncio.sleep(0.1)
    await asyncio.gather(*calls)
    assert (await blocking).structured == blocked, "the blocking call finishes on its own pod"

    assert seen == Counter({"ok": len(calls)}), seen
    assert blocked in pids, "calls sent before the gateway knew waited on the blocked pod"
    assert any(pid != blocked for pid in pids), "later ones went to another pod"
    assert alive(blocked) and blocked in ready_pids(gateway), "the pod was not killed"

    text = await scrape(gateway)
    for reason in ("blocked", "unresponsive"):
        assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason=reason) == 0
    assert metric(text, "toolmesh_pod_loop_blocks_total", runtime="tools", function="blocker") == 1
    pod = await _pod_metrics(gateway, blocked)
    assert metric(pod, "toolmesh_runtime_loop_blocks_total", function="blocker") == 1
    held = metric(
        pod, "toolmesh_runtime_loop_blocked_seconds", function="blocker", request_id="blocked-request-1"
    )
    assert BLOCK_SECONDS - 1 < held < BLOCK_SECONDS + 1, held

    logs = capfd.readouterr().err
    named = [
        line
        for line in logs.splitlines()
        if "blocked the event loop" in line and '"request_id": "blocked-request-1"' in line
    ]
    assert named and '"function": "blocker"' in named[0], logs[-3000:]
    assert "asyncio.to_thread" in named[0], "the log line says what to do instead"


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["socket", "grpc"])
async def test_a_call_blocking_past_its_timeout_gets_a_clear_timeout_and_its_pod_is_replaced(
    gateway_factory: StartGateway, client: Any, transport: str
) -> None:
    gateway = await gateway_factory(
        runtime("tools", "loop_tools", min_replicas=1, max_replicas=1, transport=transport)
    )
    mesh = client(gateway)
    (blocked,) = ready_pids(gateway)
    # Started on the pod before its loop is blocked: may have run, so not sent elsewhere.
    started = asyncio.ensure_future(mesh.invoke("append", {"seconds": 10}))
    await asyncio.sleep(0.3)
    blocking = asyncio.ensure_future(mesh.invoke("short_blocker", {"seconds": 30}))
    await asyncio.sleep(0.3)
    # Sent to the pod while its loop is blocked: never started there, so safe to send elsewhere.
    unstarted = asyncio.ensure_future(mesh.invoke("append", {}))
    waited = asyncio.get_running_loop().time()

    with pytest.raises(FunctionTimeout) as timed_out:
        await blocking
    message = timed_out.value.message
    assert "short_blocker did not finish within 2 s" in message, message
    assert "blocked its pod's event loop" in message and "loop_tools.py" in message, message
    assert "asyncio.to_thread" in message, message
    assert asyncio.get_running_loop().time() - waited < 5, "replaced at the call's limit, not later"

    answer = await unstarted
    assert not answer.is_error and answer.structured != blocked
    with pytest.raises(Unavailable, match="died mid-call") as lost:
        await started
    assert "short_blocker" in lost.value.message and "may have run" in lost.value.message
    await eventually(lambda: not alive(blocked))
    text = await scrape(gateway)
    assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="blocked") == 1
    assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="unresponsive") == 0
    assert (await mesh.invoke("lookup", {})).structured != blocked


@pytest.mark.slow
async def test_a_frozen_pod_is_still_killed_while_a_blocked_one_is_not(
    gateway_factory: StartGateway, client: Any
) -> None:
    gateway = await gateway_factory(runtime("tools", "loop_tools", min_replicas=2, max_replicas=2))
    mesh = client(gateway)
    await eventually(lambda: len(ready_pids(gateway)) == 2)
    blocked, frozen = ready_pids(gateway)  # a call goes to the oldest of two idle pods
    blocking = asyncio.ensure_future(mesh.invoke("blocker", {"seconds": BLOCK_SECONDS}))
    await asyncio.sleep(0.3)
    os.kill(frozen, signal.SIGSTOP)
    try:
        await eventually(lambda: not alive(frozen))
        assert (await blocking).structured == blocked and alive(blocked)
        text = await scrape(gateway)
        assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="unresponsive") == 1
        assert metric(text, "toolmesh_pod_restarts_total", runtime="tools", reason="blocked") == 0
        assert all(r.killed_for != "blocked" for r in replicas(gateway).replicas)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(frozen, signal.SIGCONT)
