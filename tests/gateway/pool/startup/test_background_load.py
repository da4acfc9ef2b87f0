"""Runtimes that load from outside the gateway load in the background: the gateway serves at once
(after `[gateway] start_grace`), a call to one still loading is a retryable 503, and it joins the
listing, the calls and MCP listeners when it has loaded; one that fails is tried again."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import grpc
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError

import toolmesh
from tests.conftest import pod_env
from tests.gateway.conftest import StartGateway, StartUp, runtime
from tests.gateway.sources.mcp_servers import python_server
from tests.gateway.sources.openapi.echo import DOCUMENTS, openapi, serve_echo
from tests.gateway.sources.test_stdio_mcp import SERVER
from toolmesh.config import RuntimeConfig
from toolmesh.error_shapes import from_rpc_error
from toolmesh.gateway.pool.runtime_pool import Pool
from toolmesh.gateway.pool.startup.background_load import BackgroundLoad
from toolmesh.gateway.pool.startup.backoff import Backoff
from toolmesh.v1 import invoke_pb2, mesh_pb2_grpc


def waiting_server(flag: Path, name: str = "memory", *more: str) -> RuntimeConfig:
    """A stdio MCP server that answers `initialize` only once `flag` exists."""
    command = (*SERVER, "--wait-for", str(flag), *more)
    return RuntimeConfig(name=name, mcp_command=command, env={"PYTHONPATH": pod_env()["PYTHONPATH"]})


async def until(predicate: Any, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "not within the time"
        await asyncio.sleep(0.1)


async def names(http: httpx.AsyncClient) -> set[str]:
    return {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}


async def test_the_gateway_serves_while_a_server_loads_and_it_joins_when_it_has(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    flag = tmp_path / "installed"
    started = asyncio.get_running_loop().time()
    gateway = await gateway_factory(runtime("tools"), waiting_server(flag), start_grace=0.5)
    assert asyncio.get_running_loop().time() - started < 10
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}")
    async with (
        channel,
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        httpx2.AsyncClient(timeout=30) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        ready = await http.get("/readyz")
        assert ready.status_code == 200 and ready.json()["runtimes"] == {"tools": True, "memory": False}
        added = (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3})).json()
        assert added["structured"] == 5
        assert not [name for name in await names(http) if name.startswith("memory.")]
        for name in ("memory.add", "memory__add"):
            refused = await http.post(f"/v1/functions/{name}/invoke", json={"a": 1, "b": 2})
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "1"
            assert refused.json()["error"]["code"] == "unavailable"
            assert "runtime 'memory' is still starting" in refused.json()["error"]["message"]
        # A name in no runtime's namespace is still unknown.
        assert (await http.post("/v1/functions/nothing.add/invoke", json={})).status_code == 404
        arguments = json.dumps({"a": 1, "b": 2}).encode()
        request = invoke_pb2.InvokeRequest(function="memory.add", arguments=arguments)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await mesh_pb2_grpc.MeshStub(channel).Invoke(request)
        assert isinstance(from_rpc_error(caught.value), toolmesh.Unavailable)
        with pytest.raises(MCPError, match="runtime 'memory' is still starting"):
            await client.call_tool("memory__add", {"a": 1, "b": 2})

        await asyncio.to_thread(flag.touch)
        with anyio.fail_after(30):
            assert isinstance(await anext(aiter(subscription)), ToolsListChanged)
        assert "memory__add" in {tool.name for tool in (await client.list_tools()).tools}
        assert "memory.add" in await names(http)
        assert (await http.get("/readyz")).json()["runtimes"] == {"tools": True, "memory": True}
        joined = (await http.post("/v1/functions/memory__add/invoke", json={"a": 1, "b": 2})).json()
        assert joined["structured"]["total"] == 3


async def test_a_fast_source_is_complete_when_the_gateway_serves(gateway_factory: StartGateway) -> None:
    """Within the grace: listed at once, with no join afterwards."""
    gateway = await gateway_factory(runtime("tools"), waiting_server(Path(os.devnull), "clock"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        assert "clock.add" in await names(http)
        assert (await http.get("/readyz")).json()["runtimes"] == {"tools": True, "clock": True}


async def test_a_remote_mcp_server_down_at_start_joins_when_it_comes_up(
    gateway_factory: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "toolmesh.pool")
    server = python_server()
    gone = RuntimeConfig(name="remote", mcp_url=server.url, startup_timeout=2)
    gateway = await gateway_factory(runtime("tools"), gone, start_grace=3)
    try:
        async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
            assert (await http.get("/readyz")).json()["runtimes"] == {"tools": True, "remote": False}
            refused = await http.post("/v1/functions/remote.add/invoke", json={"a": 1, "b": 2})
            assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
            message = refused.json()["error"]["message"]
            assert f"runtime 'remote': MCP server {server.url}" in message and "tried again" in message
            await asyncio.to_thread(server.start)

            async def joined() -> bool:
                return "remote.add" in await names(http)

            await until(joined)
            added = (await http.post("/v1/functions/remote.add/invoke", json={"a": 1, "b": 2})).json()
            assert added["structured"]["total"] == 3
    finally:
        await asyncio.to_thread(server.kill)
    # The first failure and the recovery are logged, not every attempt.
    failures = [r for r in caplog.records if "tried again in the background" in r.getMessage()]
    assert len(failures) == 1 and failures[0].levelno == logging.ERROR
    assert any("runtime 'remote' has loaded after all" in r.getMessage() for r in caplog.records)


async def test_an_openapi_document_that_is_not_there_yet_is_served_once_it_is(
    gateway_factory: StartGateway,
) -> None:
    name = f"late-{uuid.uuid4().hex}"
    with serve_echo() as origin:
        document = RuntimeConfig(name="shop", openapi=f"{origin}/docs/{name}", base_url=origin)
        gateway = await gateway_factory(document, start_grace=0)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:

            async def refused_as_unavailable() -> bool:
                answer = await http.post("/v1/functions/shop.ping/invoke", json={})
                return answer.status_code == 503 and "404" in answer.json()["error"]["message"]

            await until(refused_as_unavailable)
            DOCUMENTS[name] = openapi({"/ping": {"get": {"operationId": "ping", "responses": {"200": {}}}}})

            async def served() -> bool:
                return (await http.post("/v1/functions/shop.ping/invoke", json={})).status_code == 200

            await until(served)
            assert (await http.get("/readyz")).json()["runtimes"] == {"shop": True}


async def test_a_reload_while_loading_waits_for_that_load_and_starts_no_other(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    flag, starts = tmp_path / "installed", tmp_path / "starts"
    counted = (
        sys.executable,
        "-c",
        f"import runpy, sys; open({str(starts)!r}, 'a').write('x'); "
        f"sys.argv = ['server', '--wait-for', {str(flag)!r}]; "
        "runpy.run_module('tests.fixtures.stdio_mcp_server', run_name='__main__')",
    )
    slow = RuntimeConfig(name="memory", mcp_command=counted, env={"PYTHONPATH": pod_env()["PYTHONPATH"]})
    gateway = await gateway_factory(slow, start_grace=0)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        await until(lambda: asyncio.to_thread(starts.exists))
        reload = asyncio.create_task(http.post("/v1/admin/reload", json={"runtime": "memory"}))
        await asyncio.sleep(0.5)
        assert not reload.done()
        await asyncio.to_thread(flag.touch)
        answer = await reload
        assert answer.status_code == 200 and answer.json()["ok"] is True, answer.text
        # The reload answers once the runtime has joined.
        assert "memory.add" in await names(http)
    # One server listed: the reload waited for the attempt under way instead of starting another.
    assert starts.read_text() == "x"


async def test_stopping_the_gateway_while_a_server_loads_leaves_no_process_behind(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    marker = f"never-{uuid.uuid4().hex}"
    gateway = await gateway_factory(waiting_server(tmp_path / marker), start_grace=0)

    async def server_started() -> bool:
        return bool(_processes(marker))

    await until(server_started)
    await gateway.stop(grace=0)
    assert not _processes(marker), "the loading server outlived the gateway"


def _processes(marker: str) -> set[int]:
    """Live processes whose command line holds `marker`."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline, open(f"/proc/{entry}/stat") as stat:
                if marker.encode() in cmdline.read() and ") Z" not in stat.read():
                    found.add(int(entry))
        except OSError:
            continue
    return found


async def test_a_failing_load_is_tried_again_with_backoff_and_a_reload_joins_the_attempt() -> None:
    attempts: list[float] = []
    gate = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def attempt() -> None:
        attempts.append(loop.time())
        if len(attempts) < 4:
            raise toolmesh.Unavailable(f"runtime 'x': down ({len(attempts)})")
        await gate.wait()

    joined = asyncio.Event()
    load = BackgroundLoad("x", attempt, joined.set, Backoff(0.2, 0.4))
    await until(lambda: _true(len(attempts) == 4), 10)
    waits = [b - a for a, b in itertools.pairwise(attempts)]
    assert [round(wait, 1) >= least for wait, least in zip(waits, (0.2, 0.4, 0.4), strict=True)] == [True] * 3
    assert list(itertools.islice(Backoff().delays(), 8)) == [1, 2, 4, 8, 16, 32, 60, 60]
    assert load.loading.message == "runtime 'x': down (3) (it is tried again in the background)"
    # The attempt under way is joined, not doubled.
    reloads = [asyncio.create_task(load.try_now()) for _ in range(2)]
    await asyncio.sleep(0.3)
    assert len(attempts) == 4 and not joined.is_set()
    gate.set()
    await asyncio.gather(*reloads)
    assert joined.is_set() and load.loaded and len(attempts) == 4
    await load.cancel()


async def test_a_reload_between_attempts_tries_at_once_and_says_why_it_failed() -> None:
    attempts = 0

    async def attempt() -> None:
        nonlocal attempts
        attempts += 1
        raise toolmesh.Unavailable("runtime 'x': still down")

    load = BackgroundLoad("x", attempt, lambda: None, Backoff(60, 60))
    await load.tried.wait()
    with pytest.raises(toolmesh.Unavailable, match="still down"):
        await asyncio.wait_for(load.try_now(), 5)
    assert attempts == 2 and load.loading.retry_after > 50
    await load.cancel()


async def _true(value: bool) -> bool:
    return value


def test_toolmesh_up_is_ready_while_a_server_loads_and_stops_it_on_sigterm(
    up: StartUp, tmp_path: Path
) -> None:
    marker = f"never-{uuid.uuid4().hex}"
    started = time.monotonic()
    running = up(
        gateway="start_grace = 0.5",
        runtimes=f"""
[[runtimes]]
name = "memory"
mcp_command = {json.dumps([*SERVER, "--wait-for", str(tmp_path / marker)])}
""",
    )
    assert time.monotonic() - started < 20  # the server never lists: the ready line came anyway
    url = f"http://127.0.0.1:{running.http_port}"
    assert httpx.get(f"{url}/readyz", timeout=10).json()["runtimes"] == {"tools": True, "memory": False}
    deadline = time.monotonic() + 30
    while not _processes(marker):
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)
    running.process.terminate()
    _, err = running.process.communicate(timeout=30)
    assert running.process.returncode == 0, err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err
    assert not _processes(marker), "the loading server outlived toolmesh up"


async def test_a_runtime_that_joined_before_anyone_listened_is_news_to_the_first_listener(
    tmp_path: Path,
) -> None:
    """The gateway subscribes after start (the router starts in between): no join is lost."""
    document = tmp_path / "shop.json"
    document.write_text(json.dumps(openapi({"/ping": {"get": {"operationId": "ping", "responses": {}}}})))
    shop = RuntimeConfig(name="shop", openapi=str(document), base_url="http://127.0.0.1:9")
    pool = Pool([shop], {}, start_grace=0)
    await pool.start()
    try:
        assert pool.readiness() == {"shop": False} and "shop" in pool.loading()
        await until(lambda: _true(not pool.loading()), 10)
        assert [spec.name for spec in (await pool.list_functions("shop"))[0]] == ["ping"]
        heard = asyncio.Event()

        async def listener() -> None:
            heard.set()

        pool.on_listing_changed(listener)
        await asyncio.wait_for(heard.wait(), 5)
    finally:
        await pool.close()
