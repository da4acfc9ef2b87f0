"""A stdio MCP server's `list_changed` reaches the mesh: the pod lists its server again, says so
in its liveness answer, and the gateway reads the pod's functions and updates the catalog, the
router and MCP listeners, as for a remote server's."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourcesListChanged, ToolsListChanged

from tests.conftest import pod_env, require_tool
from tests.gateway.conftest import StartGateway
from tests.gateway.sources.mcp_servers import EVERYTHING_MAIN, everything_server
from tests.gateway.sources.test_stdio_mcp import SERVER
from toolmesh.config import RuntimeConfig


def growing(**settings: Any) -> RuntimeConfig:
    command = (*SERVER, "--growing")
    return RuntimeConfig(
        name="clock", mcp_command=command, env={"PYTHONPATH": pod_env()["PYTHONPATH"]}, **settings
    )


async def names(http: httpx.AsyncClient) -> set[str]:
    return {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}


async def until(predicate: Any, timeout: float = 10.0) -> bool:
    for _ in range(int(timeout / 0.05)):
        if await predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_tool_the_server_adds_is_served_and_mcp_listeners_hear_of_it(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(growing(max_replicas=1))
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        httpx2.AsyncClient(timeout=30) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        assert "clock.grown" not in await names(http)
        grew = (await http.post("/v1/functions/clock.grow/invoke", json={})).json()
        assert grew["structured"] == {"result": "grew"}
        with anyio.fail_after(10):
            assert isinstance(await anext(aiter(subscription)), ToolsListChanged)
        assert "clock__grown" in {tool.name for tool in (await client.list_tools()).tools}
        assert "clock.grown" in await names(http)
        called = (await http.post("/v1/functions/clock.grown/invoke", json={})).json()
        assert called["content"][0]["text"] == "new"
        mcp_called = await client.call_tool("clock__grown", {})
        assert not mcp_called.is_error and mcp_called.content[0].text == "new"  # type: ignore[union-attr]


async def test_when_the_pod_that_changed_exits_the_templates_listing_is_served_again(
    gateway_factory: StartGateway,
) -> None:
    """Its server went with it; the next pod's server lists what the template's did."""
    gateway = await gateway_factory(growing(max_replicas=1, idle_timeout=0.5))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        await http.post("/v1/functions/clock.grow/invoke", json={})
        assert await until(lambda: _has(http, "clock.grown"))
        # Idle, the pod stops, and its server with it.
        assert await until(lambda: _has(http, "clock.grown", False), 20)
        refused = await http.post("/v1/functions/clock.grown/invoke", json={})
        assert refused.status_code == 404


async def _has(http: httpx.AsyncClient, name: str, present: bool = True) -> bool:
    return (name in await names(http)) is present


async def test_a_resource_server_everything_adds_is_served(gateway_factory: StartGateway) -> None:
    """The official npm server registers a session resource when `gzip-file-as-resource` is
    called, and says `notifications/resources/list_changed`: MCP listeners hear it, and the
    resource is listed and read."""
    everything_server()  # skips (or fails under TOOLMESH_REQUIRE_E2E) when it is not installed
    node = require_tool("node", "Node.js 20+")
    command = (node, str(EVERYTHING_MAIN), "stdio")
    gateway = await gateway_factory(
        RuntimeConfig(name="everything", mcp_command=command, startup_timeout=60, max_replicas=1)
    )
    uri = "demo://resource/session/hello.gz"
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        httpx2.AsyncClient(timeout=30) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
        client.listen(resources_list_changed=True) as subscription,
    ):
        assert uri not in {str(r.uri) for r in (await client.list_resources()).resources}
        arguments = {
            "name": "hello.gz",
            "data": "data:text/plain;base64,aGVsbG8=",
            "outputType": "resourceLink",
        }
        zipped = await http.post("/v1/functions/everything.gzip_file_as_resource/invoke", json=arguments)
        assert zipped.json()["is_error"] is False, zipped.text
        with anyio.fail_after(10):
            assert isinstance(await anext(aiter(subscription)), ResourcesListChanged)
        assert uri in {str(r.uri) for r in (await client.list_resources()).resources}
        read = await client.read_resource(uri)
        listed = [r["uri"] for r in (await http.get("/v1/resources")).json()["resources"]]
    assert read.contents and read.contents[0].blob  # type: ignore[union-attr]
    assert uri in listed
