"""Tool-search mode (`/mcp?tools=search`, gateway/mcp/tool_search.py), driven by the official
`mcp` client against real pods: two meta-tools listed, search ranked by the router (or by
keywords without it), `call_tool` running a tool as a direct call would, within the key's scopes,
in both protocol eras; and SEP-1821's draft `query` on tools/list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.core.test_keyed_calls import KEYED, runs
from tests.gateway.mcp.test_direct_calls import call, reached_sdk
from tests.gateway.mcp.test_endpoint import ERAS, all_tools, connect
from tests.gateway.mcp.test_input_requests import Answers
from tests.gateway.mcp.test_tasks import connect as tasks_connect
from toolmesh.config import KeyConfig, RouterConfig
from toolmesh.gateway.server import Gateway

__all__ = ["reached_sdk"]  # a fixture, used here

TOOLS = runtime("tools", "router_tools", "sample_tools")
KEYS = [
    KeyConfig(name="weather", key_env="WEATHER_KEY", scopes=("get_weather", "add", "counter.*")),
    KeyConfig(name="all", key_env="ALL_KEY"),
]
#: A 2026-07-28 request's `_meta` envelope.
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ENVIRON = {"WEATHER_KEY": "weather-secret", "ALL_KEY": "all-secret"}


async def routed(gateway_factory: StartGateway, router_cache: Path, tmp_path: Path) -> Gateway:
    router = RouterConfig(cache_dir=router_cache, data_dir=tmp_path / "router")
    return await gateway_factory(TOOLS, keys=KEYS, environ=ENVIRON, router=router)


def found(result: types.CallToolResult) -> list[str]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(text(result)) == result.structured_content
    return [entry["name"] for entry in result.structured_content["tools"]]


def text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


@pytest.mark.parametrize("mode", ERAS)
async def test_lists_two_meta_tools_and_searches_by_keyword_without_the_router(
    gateway_factory: StartGateway, mode: str
) -> None:
    gateway = await gateway_factory(TOOLS)
    async with connect(f"{gateway.url}/mcp?tools=search", mode=mode) as client:
        listing = await client.list_tools()
        assert [t.name for t in listing.tools] == ["search_tools", "call_tool"]
        assert listing.next_cursor is None
        search = listing.tools[0]
        assert "keyword" in (search.description or "")
        assert search.input_schema["required"] == ["query"]
        result = await client.call_tool("search_tools", {"query": "Weather"})
        assert found(result)[0] == "get_weather"
        assert result.structured_content is not None and result.structured_content["ranking"] == "keyword"
        entry = result.structured_content["tools"][0]
        assert entry["inputSchema"]["properties"]["city"]["type"] == "string"
        assert "weather" in entry["description"].lower()
        counters = found(await client.call_tool("search_tools", {"query": "counter", "limit": 1}))
        assert len(counters) == 1 and counters[0].startswith("counter__")
        assert found(await client.call_tool("search_tools", {"query": "zzzz qqqq xylophone"})) == []
        # call_tool runs the tool as a direct call does; a direct call of a real name still works.
        via = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": 2, "b": 3}})
        direct = await client.call_tool("add", {"a": 2, "b": 3})
    assert via.model_dump() == direct.model_dump()
    assert via.structured_content == {"result": 5} and text(via) == "5"
    # Without the opt-in the catalog is listed as ever.
    async with connect(f"{gateway.url}/mcp", mode=mode) as client:
        assert len(await all_tools(client)) == len(gateway.mesh.catalog)


@pytest.mark.parametrize("mode", ERAS)
async def test_the_router_ranks_and_a_key_finds_and_calls_only_its_scopes(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path, mode: str
) -> None:
    gateway = await routed(gateway_factory, router_cache, tmp_path)
    async with connect(f"{gateway.url}/mcp?tools=search", key="all-secret", mode=mode) as client:
        listing = await client.list_tools()
        assert "router" in (listing.tools[0].description or "")
        weather = await client.call_tool("search_tools", {"query": "What's the weather like in Oslo?"})
        assert found(weather)[0] == "get_weather"
        assert weather.structured_content is not None
        assert weather.structured_content["ranking"] == "router"
        email = found(await client.call_tool("search_tools", {"query": "send an email", "limit": 3}))
        assert email[0] == "send_email" and len(email) == 3
        many = found(await client.call_tool("search_tools", {"query": "do something", "limit": 50}))
        assert len(many) == len(set(many)) == len(gateway.mesh.catalog)
    async with connect(f"{gateway.url}/mcp?tools=search", key="weather-secret", mode=mode) as client:
        allowed = {"get_weather", "add", "counter__increment", "counter__current"}
        for query in ("send an email", "book a flight to Rome", "What's the weather in Oslo?", "echo"):
            names = found(await client.call_tool("search_tools", {"query": query, "limit": 50}))
            assert set(names) <= allowed, query
            assert len(names) == len(allowed)
        for name in ("send_email", "echo", "book_flight"):  # out of scope: as if it did not exist
            refused = await client.call_tool(
                "call_tool", {"name": name, "arguments": {"to": "a@b.c", "subject": "x", "text": "x"}}
            )
            assert refused.is_error and f"{name!r}" in text(refused), text(refused)
            with pytest.raises(MCPError) as direct:
                await client.call_tool(name, {})
            assert direct.value.code == types.INVALID_PARAMS
        weather = await client.call_tool("call_tool", {"name": "get_weather", "arguments": {"city": "Oslo"}})
        assert not weather.is_error and weather.structured_content is not None


@pytest.mark.parametrize("mode", ERAS)
async def test_bad_meta_tool_calls_are_error_results_naming_what_is_wrong(
    gateway_factory: StartGateway, mode: str
) -> None:
    gateway = await gateway_factory(TOOLS)
    async with connect(f"{gateway.url}/mcp?tools=search", mode=mode) as client:
        for _ in range(3):  # nothing is kept between calls
            unknown = await client.call_tool("call_tool", {"name": "nope", "arguments": {}})
            assert unknown.is_error and "'nope'" in text(unknown)
            via = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": "two"}})
            direct = await client.call_tool("add", {"a": "two"})
            assert via.is_error and 'a: expected integer, got string "two"' in text(via)
            assert via.model_dump() == direct.model_dump()
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("call_tool", {}, "name: expected a tool name"),
                ("call_tool", {"name": 5}, "name: expected a tool name"),
                ("call_tool", {"name": "add", "arguments": [1]}, "arguments: expected an object"),
                ("call_tool", {"name": "add", "extra": 1}, "extra: expected no such argument"),
                ("search_tools", {}, "query: expected a non-empty string"),
                ("search_tools", {"query": "  "}, "query: expected a non-empty string"),
                ("search_tools", {"query": "x", "limit": 0}, "limit: expected an integer from 1 to 50"),
                ("search_tools", {"query": "x", "limit": 51}, "limit: expected an integer from 1 to 50"),
                ("search_tools", {"query": "x", "limit": True}, "limit: expected an integer from 1 to 50"),
                ("search_tools", {"query": "x", "limit": "3"}, "limit: expected an integer from 1 to 50"),
            ]
            for name, arguments, expected in cases:
                result = await client.call_tool(name, arguments)
                assert result.is_error, (name, arguments)
                assert f"invalid arguments for {name}" in text(result) and expected in text(result), text(
                    result
                )


async def test_a_namespace_path_searches_only_that_namespace(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(TOOLS)
    async with connect(f"{gateway.url}/mcp/counter?tools=search") as client:
        names = found(await client.call_tool("search_tools", {"query": "counter weather email"}))
        assert names and all(name.startswith("counter__") for name in names)
        outside = await client.call_tool("call_tool", {"name": "get_weather", "arguments": {"city": "x"}})
        assert outside.is_error
        bumped = await client.call_tool("call_tool", {"name": "counter__increment", "arguments": {}})
        assert not bumped.is_error


async def test_call_tool_keeps_the_idempotency_key(gateway_factory: StartGateway, tmp_path: Path) -> None:
    gateway = await gateway_factory(KEYED)
    log = tmp_path / "log"
    arguments = {"name": "append", "arguments": {"path": str(log), "text": "m"}}
    async with (
        httpx2.AsyncClient(headers={"Idempotency-Key": "search-1"}, timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp?tools=search", http_client=http)) as client,
    ):
        answers = [await client.call_tool("call_tool", arguments) for _ in range(3)]
    assert [a.is_error for a in answers] == [False] * 3
    assert len({json.dumps(a.structured_content) for a in answers}) == 1
    assert runs(log) == ["m"]


async def test_another_value_of_the_tools_parameter_is_a_clear_400(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(TOOLS)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=30) as http:
        for query in ("tools=all", "tools=", "tools=search&tools=search", "tools=SEARCH"):
            answer = await http.post(f"{gateway.url}/mcp?{query}", json=body, headers=headers)
            assert answer.status_code == 400, query
            assert "'tools'" in answer.json()["error"]["message"]


async def list_with_query(url: str, params: dict[str, Any], key: str, era: str) -> dict[str, Any]:
    """A raw tools/list with `params` (the SDK client has no way to send `query`)."""
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": era,
        "authorization": f"Bearer {key}",
    }
    if era != "2025-11-25":  # the per-request envelope
        params = params | {"_meta": ENVELOPE}
        headers["mcp-method"] = "tools/list"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(url, json=body, headers=headers)
    assert answer.status_code in (200, 400), answer.text
    data = answer.text.split("data: ", 1)[1] if answer.text.startswith("event:") else answer.text
    reply: dict[str, Any] = json.loads(data)
    return reply


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_the_draft_tools_list_query_returns_ranked_real_tools(
    gateway_factory: StartGateway, router_cache: Path, tmp_path: Path, era: str
) -> None:
    gateway = await routed(gateway_factory, router_cache, tmp_path)
    for path in ("/mcp", "/mcp?tools=search"):
        reply = await list_with_query(gateway.url + path, {"query": "send an email"}, "all-secret", era)
        tools = reply["result"]["tools"]
        assert tools[0]["name"] == "send_email" and "inputSchema" in tools[0]
        assert "nextCursor" not in reply["result"]
        scoped = await list_with_query(gateway.url + path, {"query": "send an email"}, "weather-secret", era)
        assert {t["name"] for t in scoped["result"]["tools"]} <= {
            "get_weather",
            "add",
            "counter__increment",
            "counter__current",
        }
        for bad in ("", 5, None):
            refused = await list_with_query(gateway.url + path, {"query": bad}, "all-secret", era)
            assert refused["error"]["code"] == types.INVALID_PARAMS, bad


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_real_tools_keep_the_fast_path_and_meta_tools_reach_the_sdk(
    gateway_factory: StartGateway, reached_sdk: list[bytearray], era: str
) -> None:
    gateway = await gateway_factory(TOOLS)
    url = f"{gateway.url}/mcp?tools=search"
    for number in range(3):
        reached_sdk.clear()
        direct = await call(url, era, number, "echo", {"text": "hi"}, inert=False)
        assert reached_sdk == [] and direct.status_code == 200
        via = await call(url, era, number, "call_tool", {"name": "echo", "arguments": {"text": "hi"}}, False)
        assert len(reached_sdk) == 1 and via.status_code == 200
        data = [r.text if era == "2026-07-28" else r.text.split("data: ", 1)[1] for r in (direct, via)]
        results = [json.loads(d)["result"] for d in data]
        assert results[0]["content"] == results[1]["content"] == [{"type": "text", "text": "hi"}]


async def test_call_tool_of_a_task_tool_is_what_its_direct_call_is(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "task_tools"))
    url = f"{gateway.url}/mcp?tools=search"
    async with tasks_connect(url) as client:  # with the tasks extension: a task, polled
        done = await client.call_tool("call_tool", {"name": "crunch", "arguments": {"word": "polled"}})
        assert done.structured_content == {"word": "polled"}
    async with tasks_connect(url, tasks=False) as client:
        for name in ("only_as_task", "call_tool"):
            arguments = {"name": "only_as_task"} if name == "call_tool" else {}
            with pytest.raises(MCPError) as refused:
                await client.call_tool(name, arguments)
            assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, name


@pytest.mark.parametrize("mode", ERAS)
async def test_call_tool_of_a_tool_that_asks_its_caller_is_answered(
    gateway_factory: StartGateway, mode: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "asking_tools"))
    answers = Answers(content={"city": "Lyon", "days": 3})
    callbacks: dict[str, Any] = {"elicitation_callback": answers.elicit}
    url = f"{gateway.url}/mcp?tools=search"
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **callbacks) as client,
    ):
        for _ in range(2):
            result = await client.call_tool("call_tool", {"name": "plan", "arguments": {}})
            assert not result.is_error, result
            assert text(result) == "3 days in Lyon"
    assert answers.asked == ["Where to?", "Where to?"]
