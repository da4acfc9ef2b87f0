"""The metrics contract end to end: promtool accepts the exposition, and a real Prometheus
server finds the gateway and its pods through the gateway's service discovery, scrapes them on
loopback and answers queries about a cold start and the call it served."""

from __future__ import annotations

import asyncio
import socket
from asyncio.subprocess import PIPE, STDOUT
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import require_tool
from tests.gateway.conftest import StartGateway, runtime
from toolmesh import AsyncClient
from toolmesh.gateway.pool.pods import Replica
from toolmesh.gateway.pool.runtime_pool import Pool
from toolmesh.gateway.server import Gateway

pytestmark = pytest.mark.slow
INSTALL = "apt-get install prometheus"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def after_a_cold_start(gateway_factory: StartGateway) -> tuple[Gateway, Replica]:
    """A gateway whose one runtime went from zero pods to one for a call, and that pod."""
    gateway = await gateway_factory(runtime("tools", "pool_tools"))
    async with AsyncClient(gateway.url) as client:
        await client.invoke("wait", {})
    assert isinstance(gateway.pool, Pool)
    (pod,) = gateway.pool.sets["tools"].replicas
    return gateway, pod


async def test_promtool_accepts_the_gateway_and_pod_metrics(gateway_factory: StartGateway) -> None:
    promtool = require_tool("promtool", INSTALL)
    gateway, pod = await after_a_cold_start(gateway_factory)
    assert pod.metrics_socket is not None
    # The pods the gateway starts serve their metrics on a Unix socket only (no TCP port).
    pod_transport = httpx.AsyncHTTPTransport(uds=pod.metrics_socket)
    async with httpx.AsyncClient() as http, httpx.AsyncClient(transport=pod_transport) as pod_http:
        expositions = {
            "gateway": (await http.get(f"{gateway.url}/metrics")).text,
            "pod": (await pod_http.get("http://pod/metrics")).text,
        }
    for source, text in expositions.items():
        assert "toolmesh_" in text
        checker = await asyncio.create_subprocess_exec(
            promtool, "check", "metrics", stdin=PIPE, stdout=PIPE, stderr=STDOUT
        )
        report, _ = await checker.communicate(text.encode())
        assert checker.returncode == 0 and not report.strip(), f"promtool on the {source}: {report!r}"


class NotReady(Exception):
    """Prometheus is listening but still starting (its API answers 503 until the TSDB is open)."""


async def query(http: httpx.AsyncClient, url: str, promql: str) -> list[dict[str, Any]]:
    response = await http.get(f"{url}/api/v1/query", params={"query": promql})
    if response.status_code == 503:
        raise NotReady
    answer = response.json()
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


async def test_prometheus_scrapes_a_cold_start(gateway_factory: StartGateway, tmp_path: Path) -> None:
    server = require_tool("prometheus", INSTALL)
    gateway, pod = await after_a_cold_start(gateway_factory)
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n"
        "  - job_name: toolmesh\n"
        "    http_sd_configs:\n"
        f"      - url: http://127.0.0.1:{gateway.http_port}/v1/metrics/targets\n"
        "        refresh_interval: 1s\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    process = await asyncio.create_subprocess_exec(
        server,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        stdout=log,
        stderr=STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    # The pods serve metrics on Unix sockets only; the gateway hands them on, and discovery
    # labels each pod's series with its runtime and pod.
    expected = {
        'toolmesh_cold_starts_total{toolmesh_role="gateway",runtime="tools"}': "1",
        'toolmesh_cold_start_seconds_count{toolmesh_role="gateway",runtime="tools"}': "1",
        'up{toolmesh_role="gateway"}': "1",
        f'up{{toolmesh_role="pod",runtime="tools",pod="{pod.pid}"}}': "1",
        f'toolmesh_runtime_invocations_total{{runtime="tools",pod="{pod.pid}",function="wait"}}': "1",
    }
    try:
        async with httpx.AsyncClient(timeout=5) as http:
            seen: dict[str, str | None] = {}
            for _ in range(300):
                await asyncio.sleep(0.1)
                try:
                    for promql in expected:
                        found = await query(http, url, promql)
                        seen[promql] = found[0]["value"][1] if found else None
                except (httpx.TransportError, NotReady):
                    continue  # not listening, or not ready, yet
                if seen == expected:
                    break
            assert seen == expected, (tmp_path / "prometheus.log").read_text()[-2000:]
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)
        log.close()
