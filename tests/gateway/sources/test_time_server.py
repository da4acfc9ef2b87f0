"""A Python MCP server from PyPI over stdio as a runtime: the reference `mcp-server-time` (the dev
extra installs it; it answers offline from the tz database), one server per pod."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import pod_env
from tests.gateway.conftest import StartGateway
from tests.gateway.pool.test_replicas import metric
from toolmesh.config import RuntimeConfig

SERVER = (sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC")


def time_runtime(command: tuple[str, ...] = SERVER, **settings: Any) -> RuntimeConfig:
    return RuntimeConfig(name="time", mcp_command=command, **settings)


async def test_its_tools_are_listed_under_the_namespace_and_answer(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(time_runtime())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        listing = {f["name"]: f for f in (await http.get("/v1/functions")).json()["functions"]}
        assert {"time.get_current_time", "time.convert_time"} <= set(listing), sorted(listing)
        convert = listing["time.convert_time"]
        assert set(convert["parameters"]["required"]) == {"source_timezone", "time", "target_timezone"}
        # Its annotations say read-only and idempotent: the mesh keeps them (retries, free text).
        assert convert["annotations"]["read_only"] and convert["annotations"]["idempotent"]
        arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        converted = (await http.post("/v1/functions/time.convert_time/invoke", json=arguments)).json()
        assert converted["is_error"] is False, converted
        assert converted["structured"]["target"]["timezone"] == "Asia/Tokyo"
        assert "T21:00:00" in converted["structured"]["target"]["datetime"]
        now = (await http.post("/v1/functions/time.get_current_time/invoke", json={"timezone": "UTC"})).json()
        assert now["structured"]["timezone"] == "UTC"


async def test_its_errors_are_the_callers(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(time_runtime())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        url = "/v1/functions/time.get_current_time/invoke"
        unknown = (await http.post(url, json={"timezone": "Mars/Olympus"})).json()
        assert unknown["is_error"] is True and "Invalid timezone" in unknown["error"]["message"]
        # The server's input schema is checked in the pod before the server sees the call.
        missing = await http.post(url, json={})
        assert missing.status_code == 422 and "timezone" in missing.text
        wrong = await http.post(url, json={"timezone": 3})
        assert wrong.status_code == 422


async def test_mcp_clients_call_it_through_the_gateway(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(time_runtime())
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["time__convert_time"].annotations is not None
        assert tools["time__convert_time"].annotations.read_only_hint is True
        result = await client.call_tool("time__get_current_time", {"timezone": "Europe/Paris"})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["timezone"] == "Europe/Paris"


async def test_a_crash_mid_call_of_an_idempotent_tool_is_retried_on_a_new_pod(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    flag = tmp_path / "crashed"
    command = (sys.executable, "-m", "tests.fixtures.time_server_crash_once", "--local-timezone", "UTC")
    env = {"PYTHONPATH": pod_env()["PYTHONPATH"], "CRASH_ONCE_FLAG": str(flag)}
    gateway = await gateway_factory(time_runtime(command, env=env, max_replicas=1))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        answer = await http.post("/v1/functions/time.get_current_time/invoke", json={"timezone": "UTC"})
        assert flag.exists(), "the server did not crash"
        # Its pod went with the server, and the pool sent the call to a new pod and server.
        assert answer.status_code == 200 and answer.json()["structured"]["timezone"] == "UTC"
        restarts = await _crashed_pods(http)
    assert restarts == 1


async def _crashed_pods(http: httpx.AsyncClient, timeout: float = 10) -> float:
    """The pods of `time` counted as crashed, once the pool has counted one (it does on reaping)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        text = (await http.get("/metrics")).text
        try:
            return metric(text, "toolmesh_pod_restarts_total", runtime="time", reason="crashed")
        except AssertionError:
            if asyncio.get_running_loop().time() > deadline:
                raise
        await asyncio.sleep(0.05)
