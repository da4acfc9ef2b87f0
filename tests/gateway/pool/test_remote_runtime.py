"""The cluster path on loopback: runtimes given by `address`, as on Kubernetes.

Several real pods behind one multi-address target (what a headless Service's DNS
name resolves to), one stopped and another started under load, and a runtime
that begins with no pod at all and gets one later. No call may be lost.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import PodProcess, pod_env
from tests.gateway.conftest import StartGateway
from tests.gateway.pool.test_replicas import eventually, metric, scrape
from toolmesh import AsyncClient, Unavailable
from toolmesh.config import ConfigError, RuntimeConfig
from toolmesh.protocol.pod_env import POD_TOKEN_ENV
from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.functions.spec import spec_to_dict

pytestmark = pytest.mark.slow


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [int(sock.getsockname()[1]) for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def catalog(tmp_path: Path, module: str) -> str:
    """What `toolmesh functions --module MODULE --format json` writes."""
    path = tmp_path / f"{module}.json"
    specs = Registry.from_modules([module]).specs()
    path.write_text(json.dumps({"functions": [spec_to_dict(spec) for spec in specs]}))
    return str(path)


def remote(name: str, ports: list[int], **settings: Any) -> RuntimeConfig:
    address = "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in ports)
    return RuntimeConfig(name=name, address=address, **settings)


async def test_calls_follow_pods_as_they_stop_and_start(
    gateway_factory: StartGateway, pod_process: Callable[..., PodProcess], tmp_path: Path
) -> None:
    ports = free_ports(3)
    start = [
        asyncio.to_thread(pod_process, "pool_tools", args=["--port", str(port), "--drain-grace", "5"])
        for port in ports[:2]
    ]
    first, second = await asyncio.gather(*start)
    gateway = await gateway_factory(remote("tools", ports, catalog=catalog(tmp_path, "pool_tools")))
    served: list[int] = []
    stop = asyncio.Event()

    async def caller(client: AsyncClient) -> None:
        while not stop.is_set():
            # `once` is not idempotent: only calls no pod started may be sent again.
            result = await client.invoke("once", {"seconds": 0.02})
            assert not result.is_error, result.text
            served.append(result.structured)

    async with AsyncClient(gateway.url) as client:
        callers = [asyncio.create_task(caller(client)) for _ in range(4)]
        await eventually(lambda: {first.process.pid, second.process.pid} <= set(served))
        # A pod goes away (a scale-down or rollout: SIGTERM, drain, exit) ...
        await asyncio.to_thread(first.terminate)
        # ... and another comes up at an address of the target.
        third = await asyncio.to_thread(pod_process, "pool_tools", args=["--port", str(ports[2])])
        await eventually(lambda: third.process.pid in served[-50:], timeout=20)
        stop.set()
        await asyncio.gather(*callers)  # any lost call would have raised here
    assert first.process.returncode == 0
    recent = set(served[-40:])
    assert first.process.pid not in recent
    assert {second.process.pid, third.process.pid} <= set(served)


async def test_a_runtime_with_no_pod_holds_calls_until_one_is_up(
    gateway_factory: StartGateway, pod_process: Callable[..., PodProcess], tmp_path: Path
) -> None:
    (port,) = free_ports(1)
    # The gateway reads the functions from the modules (as on Kubernetes, where its image has them).
    gateway = await gateway_factory(
        remote("asleep", [port], modules=("pool_tools",), env={"PYTHONPATH": pod_env()["PYTHONPATH"]})
    )
    async with httpx.AsyncClient() as http:
        ready = await http.get(f"{gateway.url}/readyz")
    assert ready.status_code == 200, "a runtime scaled to zero is ready: calls wait for it"

    async with AsyncClient(gateway.url, timeout=60) as client:
        held = asyncio.create_task(client.invoke("wait", {}))
        await eventually(lambda: gateway.pool.readiness() and _pending(gateway) == 1)  # type: ignore[attr-defined]
        text = await scrape(gateway)
        assert metric(text, "toolmesh_pending_requests", runtime="asleep") == 1
        assert metric(text, "toolmesh_cold_starts_total", runtime="asleep") == 1
        pod = await asyncio.to_thread(pod_process, "pool_tools", args=["--port", str(port)])
        result = await held
    assert result.structured == pod.process.pid
    text = await scrape(gateway)
    assert metric(text, "toolmesh_pending_requests", runtime="asleep") == 0
    assert metric(text, "toolmesh_cold_start_seconds_count", runtime="asleep") == 1


def _pending(gateway: Any) -> int:
    return int(gateway.pool._remotes["asleep"].pending)


async def test_held_calls_give_up_cleanly_when_no_pod_comes(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    (port,) = free_ports(1)
    gateway = await gateway_factory(
        remote("asleep", [port], catalog=catalog(tmp_path, "pool_tools"), startup_timeout=0.5)
    )
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{gateway.url}/v1/functions/wait/invoke", json={})
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert "no pod of runtime 'asleep'" in answer.json()["error"]["message"]


async def test_an_unreachable_runtime_without_a_catalog_fails_start_up_clearly(
    gateway_factory: StartGateway,
) -> None:
    (port,) = free_ports(1)
    with pytest.raises(Unavailable, match="give it a `catalog` file"):
        await gateway_factory(RuntimeConfig(name="gone", address=f"127.0.0.1:{port}", startup_timeout=0.3))


async def test_a_missing_or_broken_catalog_file_fails_start_up_naming_it(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    (port,) = free_ports(1)
    broken = tmp_path / "broken.json"
    broken.write_text('{"functions": [')
    for path in (tmp_path / "missing.json", broken):
        with pytest.raises(ConfigError, match=f"catalog file {path}"):
            await gateway_factory(remote("asleep", [port], catalog=str(path)))


async def test_the_gateway_presents_the_token_a_remote_runtimes_pods_require(
    gateway_factory: StartGateway, pod_process: Callable[..., PodProcess]
) -> None:
    token = "remote-pod-token"
    pod = await asyncio.to_thread(pod_process, "pool_tools", env={POD_TOKEN_ENV: token})
    config = RuntimeConfig(name="guarded", address=pod.address, token_env="GUARDED_TOKEN")
    gateway = await gateway_factory(config, environ={"GUARDED_TOKEN": token})
    async with AsyncClient(gateway.url) as client:
        assert (await client.invoke("wait", {})).structured == pod.process.pid
    # Without the token the same pod turns the gateway away.
    modules = {"modules": ("pool_tools",), "env": {"PYTHONPATH": pod_env()["PYTHONPATH"]}}
    blind = RuntimeConfig(name="blind", address=pod.address, **modules)
    gateway = await gateway_factory(blind)
    async with AsyncClient(gateway.url) as client:
        # The pod refused the gateway, not the caller: not a 401 that sends them to their own key.
        with pytest.raises(Unavailable) as refused:
            await client.invoke("wait", {})
    assert "refused the gateway's token; check its [runtimes] token_env" in refused.value.message


async def test_a_token_env_the_environment_lacks_stops_start_up(gateway_factory: StartGateway) -> None:
    config = RuntimeConfig(name="guarded", address="127.0.0.1:1", token_env="GUARDED_TOKEN")
    with pytest.raises(
        ConfigError, match=r"runtimes\.guarded: environment variable GUARDED_TOKEN is not set"
    ):
        await gateway_factory(config)
