"""A stdio MCP server (tests/fixtures/stdio_mcp_server.py, written with the official SDK) as a
runtime: one server process per pod, its tools under the runtime's namespace."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import pod_env
from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import RuntimeConfig

SERVER = (sys.executable, "-m", "tests.fixtures.stdio_mcp_server")


def clock(**settings: Any) -> RuntimeConfig:
    return RuntimeConfig(
        name="clock", mcp_command=SERVER, env={"PYTHONPATH": pod_env()["PYTHONPATH"]}, **settings
    )


async def test_the_servers_tools_are_functions_of_the_namespace(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(clock())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        listing = {f["name"]: f for f in (await http.get("/v1/functions")).json()["functions"]}
        assert set(listing) == {"clock.add", "clock.convert_time", "clock.fail", "clock.crash", "clock.count"}
        assert listing["clock.add"]["description"] == "Add two integers."
        assert listing["clock.add"]["parameters"]["required"] == ["a", "b"]
        added = (await http.post("/v1/functions/clock.add/invoke", json={"a": 2, "b": 40})).json()
        assert added["is_error"] is False and added["structured"]["total"] == 42
        # The server runs in the pod, not in the gateway: one process per pod.
        assert added["structured"]["pid"] != os.getpid()
        converted = (
            await http.post("/v1/functions/clock.convert_time/invoke", json={"time": "12:00"})
        ).json()
        # The SDK's server wraps a str return as structured {"result": ...}: passed on as it is.
        assert converted["structured"] == {"result": "12:00 in UTC"}
        failed = (await http.post("/v1/functions/clock.fail/invoke", json={"message": "no clock"})).json()
        assert failed["is_error"] is True and "no clock" in failed["error"]["message"]
        # The server's own text, as a remote server's reads: no class name of the bridge's in front.
        assert failed["error"]["message"] == failed["content"][0]["text"]
        assert not failed["error"]["message"].startswith("McpToolError")
        wrong = await http.post("/v1/functions/clock.add/invoke", json={"a": "two"})
        assert wrong.status_code == 422


async def test_a_server_that_exits_mid_call_takes_its_pod_and_the_next_call_starts_both(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(clock(max_replicas=1))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        first = (await http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 1})).json()
        crashed = await http.post("/v1/functions/clock.crash/invoke", json={})
        # `crash` does not say it is idempotent: not sent again, the caller hears it may have run.
        assert crashed.status_code == 503 and "died mid-call" in crashed.json()["error"]["message"]
        again = (await http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 2})).json()
    assert again["structured"]["total"] == 3 and again["structured"]["pid"] != first["structured"]["pid"]


async def test_mcp_clients_see_the_tools(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(clock())
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"clock__add", "clock__convert_time"} <= names
        result = await client.call_tool("clock__add", {"a": 20, "b": 22})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["total"] == 42


async def test_an_idle_pod_takes_its_server_with_it_and_the_next_call_starts_both(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(clock(idle_timeout=0.5))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        first = (await http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 1})).json()
        server = first["structured"]["pid"]
        assert await _gone(server, 20), "the server outlived its idle pod"
        again = (await http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 2})).json()
    assert again["structured"]["total"] == 3 and again["structured"]["pid"] != server


async def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout * 10)):
        if not _alive(pid) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_server_that_exits_at_once_names_itself_and_the_others_still_serve(
    gateway_factory: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    broken = RuntimeConfig(name="broken", mcp_command=(sys.executable, "-c", "raise SystemExit(3)"))
    gateway = await gateway_factory(runtime("tools"), broken)
    assert "runtime 'broken' failed to load" in caplog.text and "did not list its tools" in caplog.text
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        ready = (await http.get("/readyz")).json()["runtimes"]
        assert ready == {"tools": True, "broken": False}
        added = (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3})).json()
        assert added["structured"] == 5
        listed = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
        assert not [name for name in listed if name.startswith("broken.")]


async def test_a_reload_starts_a_runtime_whose_server_failed_at_first(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    flag = tmp_path / "installed"
    late = (
        sys.executable,
        "-c",
        f"import os, runpy, sys; os.path.exists({str(flag)!r}) or sys.exit(3); "
        "runpy.run_module('tests.fixtures.stdio_mcp_server', run_name='__main__')",
    )
    gateway = await gateway_factory(
        RuntimeConfig(name="late", mcp_command=late, env={"PYTHONPATH": pod_env()["PYTHONPATH"]})
    )
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        refused = await http.post("/v1/functions/late.add/invoke", json={"a": 1, "b": 2})
        # A runtime the gateway has, failing for now and tried again: not unknown.
        assert refused.status_code == 503 and "exited with status 3" in refused.json()["error"]["message"]
        await asyncio.to_thread(flag.touch)
        reloaded = await http.post("/v1/admin/reload", json={"runtime": "late"})
        assert reloaded.status_code == 200, reloaded.text
        added = (await http.post("/v1/functions/late.add/invoke", json={"a": 1, "b": 2})).json()
        assert added["structured"]["total"] == 3
        assert (await http.get("/readyz")).json()["runtimes"] == {"late": True}


async def test_the_servers_progress_and_log_messages_reach_a_caller_who_asks(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(clock())
    sse = {"accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        url = "/v1/functions/clock.count/invoke"
        asked = await http.post(f"{url}?progress=true&log_level=info", json={"n": 2}, headers=sse)
        plain = await http.post(url, json={"n": 2}, headers=sse)
    events = [
        (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("data: ", 1)[1]))
        for block in asked.text.strip().split("\n\n")
    ]
    assert events[:-1] == [
        ("log", {"level": "info", "logger": "clock.count", "data": {"message": "step 1"}}),
        ("progress", {"progress": 1, "total": 2, "message": "step 1 of 2"}),
        ("log", {"level": "info", "logger": "clock.count", "data": {"message": "step 2"}}),
        ("progress", {"progress": 2, "total": 2, "message": "step 2 of 2"}),
    ]
    assert events[-1][0] == "result" and events[-1][1]["structured"] == {"result": 2}
    assert plain.text.count("event: ") == 1
