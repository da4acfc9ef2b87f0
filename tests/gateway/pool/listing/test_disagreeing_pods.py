"""Two pods of one stdio MCP runtime disagree: one's server added a tool, the other's did not.

The runtime serves what the pod that changed lists: `/v1/functions` and MCP `tools/list` show the
new tool. A call of it that lands on the other pod did not run there, and its caller is told so
with a 404 that names the disagreement, never a 5xx (gateway/pool/listing/disagreement.py).
"""

from __future__ import annotations

import asyncio

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.gateway.conftest import StartGateway
from tests.gateway.sources.test_stdio_list_changed import growing, names, until


async def test_a_tool_only_one_pod_has_is_listed_and_calls_elsewhere_say_why(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(growing(min_replicas=2, max_replicas=2))
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        httpx2.AsyncClient(timeout=30) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
    ):
        # Calls at once spread over both pods (each server says its pid).
        sums = await asyncio.gather(
            *(http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 2}) for _ in range(4))
        )
        assert len({s.json()["structured"]["pid"] for s in sums}) == 2
        await http.post("/v1/functions/clock.grow/invoke", json={})  # one pod's server grows
        assert await until(lambda: _listed(http))
        assert "clock__grown" in {tool.name for tool in (await client.list_tools()).tools}

        answers = await asyncio.gather(
            *(http.post("/v1/functions/clock.grown/invoke", json={}) for _ in range(4))
        )
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [200, 200, 404, 404], [a.text for a in answers]
        for answer in answers:
            if answer.status_code == 200:
                assert answer.json()["content"][0]["text"] == "new"
            else:
                error = answer.json()["error"]
                assert error["code"] == "function_not_found"
                assert "pods disagree" in error["message"] and "did not run" in error["message"]

        # Over MCP: the tool's result, or the JSON-RPC error for an unknown tool, saying why.
        for _ in range(10):
            calls = (client.call_tool("clock__grown", {}) for _ in range(4))
            mcp_answers = await asyncio.gather(*calls, return_exceptions=True)
            for answer in mcp_answers:
                if isinstance(answer, MCPError):
                    assert answer.error.code == -32602 and "pods disagree" in answer.error.message
                else:
                    assert not isinstance(answer, BaseException), answer
                    assert not answer.is_error and answer.content[0].text == "new"  # type: ignore[union-attr]
            if any(isinstance(answer, MCPError) for answer in mcp_answers):
                break
        else:
            raise AssertionError("no MCP call reached the pod without the tool")


async def _listed(http: httpx.AsyncClient) -> bool:
    return "clock.grown" in await names(http)
