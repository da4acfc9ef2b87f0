"""The MCP endpoint, driven by the official `mcp` client over Streamable HTTP against real pods."""

from __future__ import annotations

import base64
import contextlib
import signal
import time
from collections.abc import AsyncIterator

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError

from tests.gateway.conftest import StartGateway, StartUp, runtime
from toolmesh.config import GatewayConfig, KeyConfig, McpConfig, MeshConfig
from toolmesh.gateway.server import Gateway, start_gateway

ERAS = ["auto", "legacy"]  # 2026-07-28 per-request envelope, and the 2025 initialize handshake


@contextlib.asynccontextmanager
async def connect(url: str, key: str | None = None, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def mesh(gateway_factory: StartGateway, **settings: object) -> Gateway:
    return await gateway_factory(runtime("tools", "sample_tools", "mcp_tools"), **settings)


async def all_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        listing = await client.list_tools(cursor=cursor)
        tools += listing.tools
        cursor = listing.next_cursor
        if cursor is None:
            return tools


@pytest.mark.parametrize("mode", ERAS)
async def test_lists_every_function_in_pages_and_calls_one(gateway_factory: StartGateway, mode: str) -> None:
    gateway = await mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp", mode=mode) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        names = [tool.name for tool in await all_tools(client)]
        assert names == sorted(names)
        assert {"add", "counter__increment", "forecast", "photo"} <= set(names)
        assert len(names) == len(gateway.mesh.catalog)
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error
    assert result.content == [types.TextContent(text="5")]
    assert result.structured_content == {"result": 5}


async def test_pages_follow_the_cursor_and_a_forged_cursor_is_refused(gateway_factory: StartGateway) -> None:
    gateway = await mesh(gateway_factory, mcp=McpConfig(page_size=4))
    async with connect(f"{gateway.url}/mcp") as client:
        first = await client.list_tools()
        assert len(first.tools) == 4 and first.next_cursor
        tools = await all_tools(client)
        names = [tool.name for tool in tools]
        assert len(names) == len(set(names)) == len(gateway.mesh.catalog)
        with pytest.raises(MCPError) as refused:
            await client.list_tools(cursor="not-a-cursor")
    assert refused.value.code == types.INVALID_PARAMS
    assert "invalid cursor" in refused.value.message


async def test_object_outputs_are_structured_content_matching_the_output_schema(
    gateway_factory: StartGateway,
) -> None:
    gateway = await mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        tools = {tool.name: tool for tool in await all_tools(client)}
        result = await client.call_tool("forecast", {"city": "Oslo", "days": 2})
        listed = await client.call_tool("cities", {})  # the client validates it against the wrapped schema
    schema = tools["forecast"].output_schema
    assert schema is not None and schema["type"] == "object" and "highs" in schema["properties"]
    assert result.structured_content == {"city": "Oslo", "highs": [20.0, 21.0]}
    assert result.content[0].type == "text"
    wrapped = tools["cities"].output_schema
    assert wrapped is not None and set(wrapped) >= {"$defs", "properties"}
    assert listed.structured_content is not None
    assert [c["city"] for c in listed.structured_content["result"]] == ["Oslo", "Rome"]
    assert tools["echo"].output_schema is None  # str: no schema, no structured content


async def test_failures_are_error_results_and_unknown_tools_protocol_errors(
    gateway_factory: StartGateway,
) -> None:
    gateway = await mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        failed = await client.call_tool("fail", {"message": "boom"})
        invalid = await client.call_tool("add", {"a": "two"})
        timed_out = await client.call_tool("sleepy", {"seconds": 2})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nope", {})
    assert failed.is_error and "boom" in failed.content[0].text  # type: ignore[union-attr]
    assert failed.structured_content is None
    assert invalid.is_error and 'a: expected integer, got string "two"' in invalid.content[0].text  # type: ignore[union-attr]
    assert timed_out.is_error
    assert unknown.value.code == -32602 and unknown.value.data["suggestions"] == ["noop"]


async def test_binary_results_become_image_audio_and_embedded_resources(
    gateway_factory: StartGateway,
) -> None:
    gateway = await mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        image = (await client.call_tool("photo", {})).content
        audio = (await client.call_tool("tone", {})).content
        report = (await client.call_tool("report", {})).content
    assert isinstance(image[0], types.ImageContent) and image[0].mime_type == "image/png"
    assert base64.b64decode(image[0].data) == b"\x89PNG\r\n\x1a\n"
    assert isinstance(audio[0], types.AudioContent) and audio[0].mime_type == "audio/wav"
    assert isinstance(report[0], types.TextContent) and report[0].text == "see the attached report"
    assert isinstance(report[1], types.EmbeddedResource)
    resource = report[1].resource
    assert isinstance(resource, types.BlobResourceContents)
    assert resource.mime_type == "application/pdf" and base64.b64decode(resource.blob) == b"%PDF-1.7"
    assert str(resource.uri).startswith("toolmesh://report/")


async def test_tools_carry_the_function_hints_as_annotations(gateway_factory: StartGateway) -> None:
    gateway = await mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp") as client:
        tools = {tool.name: tool for tool in await all_tools(client)}
    forecast, forget = tools["forecast"], tools["forget"]
    assert forecast.title == "Weather forecast"
    assert forecast.annotations == types.ToolAnnotations(
        title="Weather forecast",
        read_only_hint=True,
        destructive_hint=False,
        idempotent_hint=True,
        open_world_hint=False,
    )
    assert forget.annotations is not None
    assert forget.annotations.destructive_hint and forget.annotations.open_world_hint
    assert not forget.annotations.read_only_hint


@pytest.mark.parametrize("mode", ERAS)
async def test_a_namespace_endpoint_exposes_only_that_namespace(
    gateway_factory: StartGateway, mode: str
) -> None:
    gateway = await mesh(gateway_factory)
    async with connect(f"{gateway.url}/mcp/counter", mode=mode) as client:
        names = [tool.name for tool in await all_tools(client)]
        assert names == ["counter__current", "counter__increment"]
        assert (await client.call_tool("counter__increment", {"by": 2})).content[0].text == "2"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as outside:
            await client.call_tool("add", {"a": 1})
    assert "namespace 'counter'" in outside.value.message
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{gateway.url}/mcp/nowhere", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )
    assert response.status_code == 404
    assert response.json()["error"]["data"]["code"] == "function_not_found"


async def test_keys_see_and_call_only_their_scopes(gateway_factory: StartGateway) -> None:
    keys = [
        KeyConfig(name="counting", key_env="COUNTING_KEY", scopes=("counter.*",)),
        KeyConfig(name="all", key_env="ALL_KEY"),
    ]
    environ = {"COUNTING_KEY": "count-secret", "ALL_KEY": "all-secret"}
    gateway = await gateway_factory(runtime("tools", "sample_tools", "mcp_tools"), keys=keys, environ=environ)
    async with connect(f"{gateway.url}/mcp", key="count-secret") as client:
        assert [tool.name for tool in await all_tools(client)] == ["counter__current", "counter__increment"]
        with pytest.raises(MCPError) as denied:
            await client.call_tool("add", {"a": 1})
    # Out of scope is answered like unknown: a key learns nothing about other keys' functions.
    assert denied.value.code == -32602 and denied.value.data["code"] == "function_not_found"
    async with connect(f"{gateway.url}/mcp", key="all-secret") as client:
        assert len(await all_tools(client)) == len(gateway.mesh.catalog)
    async with httpx.AsyncClient() as http:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        missing = await http.post(f"{gateway.url}/mcp", json=ping)
        wrong = await http.post(f"{gateway.url}/mcp", json=ping, headers={"Authorization": "Bearer nope"})
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["error"]["data"]["code"] == "unauthenticated"
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "unknown API key"


async def test_foreign_origins_are_refused(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(mcp=McpConfig(allowed_origins=("https://app.example.com",)))
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=headers) as http:
        foreign = await http.post("/mcp", json=ping, headers={"Origin": "https://evil.example"})
        null = await http.post("/mcp", json=ping, headers={"Origin": "null"})
        allowed = [
            await http.post("/mcp", json=ping, headers={"Origin": origin})
            for origin in ("http://localhost:6274", "http://127.0.0.1:3000", "https://app.example.com")
        ]
        absent = await http.post("/mcp", json=ping)
    assert foreign.status_code == 403 and null.status_code == 403
    assert foreign.json()["error"]["data"]["param"] == "Origin"
    assert "evil.example" in foreign.json()["error"]["message"]
    assert [r.status_code for r in allowed] == [200, 200, 200] and absent.status_code == 200


async def test_catalog_changes_reach_listen_streams_as_list_changed(gateway_factory: StartGateway) -> None:
    gateway = await mesh(gateway_factory)
    catalog = gateway.mesh.catalog
    async with connect(f"{gateway.url}/mcp") as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed
        async with client.listen(tools_list_changed=True) as subscription:
            catalog.replace([spec for spec in catalog.specs() if spec.name != "forget"])
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        assert isinstance(event, ToolsListChanged)
        names = {tool.name for tool in await all_tools(client)}
    assert "forget" not in names and "forecast" in names
    async with connect(f"{gateway.url}/mcp", mode="legacy") as legacy:
        # No session, no standalone stream to push on: the handshake era is told not to wait for one.
        assert legacy.server_capabilities.tools is not None
        assert not legacy.server_capabilities.tools.list_changed


async def test_stopping_the_gateway_ends_open_listen_streams() -> None:
    runtimes = (runtime("tools", "sample_tools"),)
    gateway = await start_gateway(
        MeshConfig(gateway=GatewayConfig(http_port=0, grpc_port=0), runtimes=runtimes)
    )
    async with (
        connect(f"{gateway.url}/mcp") as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        with anyio.fail_after(15):
            await gateway.stop(grace=0)
            events = [event async for event in subscription]
    assert events == []


@pytest.mark.slow
async def test_sigterm_ends_listen_streams_at_once_and_get_holds_no_stream(up: StartUp) -> None:
    grace = 10.0
    gateway = up(f"drain_grace = {grace}\n")
    url = f"http://127.0.0.1:{gateway.http_port}/mcp"
    async with connect(url, mode="legacy") as legacy:
        assert legacy.protocol_version == "2025-11-25"
    async with httpx.AsyncClient(timeout=5) as http:
        # What a handshake-era client opens after initialize: refused, instead of held open for ever.
        get = await http.get(
            url, headers={"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        )
    assert get.status_code == 405 and get.headers["allow"] == "POST"
    async with connect(url) as client, client.listen(tools_list_changed=True) as subscription:
        gateway.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        with anyio.fail_after(grace / 2):
            events = [event async for event in subscription]
    assert events == [], "the stream ended cleanly, with nothing in it"
    _, stderr = await anyio.to_thread.run_sync(lambda: gateway.process.communicate(timeout=grace))
    exited = time.monotonic() - signalled
    assert gateway.process.returncode == 0
    assert exited < grace / 2, f"exited {exited:.1f} s after SIGTERM, with nothing in flight"
    assert "Traceback" not in stderr


async def test_header_checks_see_only_the_callers_tools(gateway_factory: StartGateway) -> None:
    """The SDK checks Mcp-Param-* headers against a tool's schema: an out-of-scope tool must look
    unknown there too, or how a header is checked would tell which tools other keys have."""
    from toolmesh.gateway.mcp import endpoint

    keys = [KeyConfig(name="counting", key_env="COUNTING_KEY", scopes=("counter.*",))]
    gateway = await gateway_factory(keys=keys, environ={"COUNTING_KEY": "count-secret"})
    assert gateway.mcp is not None
    principal = gateway.mesh.authenticate("Bearer count-secret")
    token = endpoint._CALLER.set(principal)
    try:
        assert gateway.mcp._input_schema("counter__increment") is not None
        assert gateway.mcp._input_schema("add") is None
        assert gateway.mcp._input_schema("nope") is None
    finally:
        endpoint._CALLER.reset(token)
    assert gateway.mcp._input_schema("counter__increment") is None, "no caller, no schema"
