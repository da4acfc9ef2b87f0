"""A stdio MCP server's `list_changed` on pods reached by an address (as on Kubernetes): the pod's
answers carry its revision in their trailers, and the gateway reads the pod's functions again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

from tests.conftest import PodProcess
from tests.gateway.conftest import StartGateway
from tests.gateway.pool.test_remote_runtime import free_ports, remote
from tests.gateway.sources.test_stdio_list_changed import names
from tests.gateway.sources.test_stdio_mcp import SERVER
from toolmesh.runtimes.mcp import BRIDGE_MODULE, bridge_environment

pytestmark = pytest.mark.slow


async def bridge_pods(pod_process: Callable[..., PodProcess], count: int) -> list[int]:
    """`count` pods of a growing stdio server's bridge, each on its own port."""
    ports = free_ports(count)
    env = bridge_environment((*SERVER, "--growing"), "clock")
    await asyncio.gather(
        *(
            asyncio.to_thread(pod_process, BRIDGE_MODULE, args=["--port", str(port)], env=env)
            for port in ports
        )
    )
    return ports


async def test_a_remote_pods_new_tool_is_served_and_mcp_listeners_hear_of_it(
    gateway_factory: StartGateway, pod_process: Callable[..., PodProcess]
) -> None:
    ports = await bridge_pods(pod_process, 2)
    gateway = await gateway_factory(remote("clock", ports))
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        httpx2.AsyncClient(timeout=30) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        assert "clock.grown" not in await names(http)
        grew = (await http.post("/v1/functions/clock.grow/invoke", json={})).json()
        assert grew["structured"] == {"result": "grew"}
        # The grown pod says so on its next answers; the address balances, so any call will do.
        for _ in range(100):
            if "clock.grown" in await names(http):
                break
            await http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 2})
            await asyncio.sleep(0.05)
        assert "clock.grown" in await names(http)
        with anyio.fail_after(10):
            assert isinstance(await anext(aiter(subscription)), ToolsListChanged)
        assert "clock__grown" in {tool.name for tool in (await client.list_tools()).tools}

        # Calls are balanced round robin: one pod has the tool, the other says why it cannot.
        answers = [await http.post("/v1/functions/clock.grown/invoke", json={}) for _ in range(4)]
        assert sorted(a.status_code for a in answers) == [200, 200, 404, 404], [a.text for a in answers]
        for answer in answers:
            if answer.status_code == 200:
                assert answer.json()["content"][0]["text"] == "new"
            else:
                assert "pods disagree" in answer.json()["error"]["message"]
