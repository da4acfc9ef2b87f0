"""Resources, resource templates, prompts and completion over MCP, with the official `mcp`
client against a real gateway and real pods, in both protocol eras."""

from __future__ import annotations

import asyncio
import base64
import json
import warnings

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import ResourceUpdated

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.mcp.test_endpoint import ERAS, connect


async def start(gateway_factory: StartGateway, namespace: str = "") -> str:
    gateway = await gateway_factory(runtime("tools", "feature_tools"))
    return f"{gateway.url}/mcp" + (f"/{namespace}" if namespace else "")


@pytest.mark.parametrize("mode", ERAS)
async def test_resources_are_listed_and_read(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    async with connect(url, mode=mode) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        listed = await client.list_resources()
        templates = await client.list_resource_templates()
        text = await client.read_resource("mem://greeting")
        binary = await client.read_resource("mem://blob")
        templated = await client.read_resource("mem://users/ada/profile")
        method = await client.read_resource("library://catalogue")
    assert tools == {"echo", "touch", "touch_sync", "library__count"}  # features are not tools
    by_uri = {str(r.uri): r for r in listed.resources}
    assert set(by_uri) == {"mem://greeting", "mem://blob", "library://catalogue"}
    assert by_uri["mem://greeting"].title == "Greeting"
    assert by_uri["mem://greeting"].description == "A static text resource."
    assert [t.uri_template for t in templates.resource_templates] == ["mem://users/{user}/profile"]
    assert text.contents == [
        types.TextResourceContents(uri="mem://greeting", mime_type="text/plain", text="hello")
    ]
    blob = binary.contents[0]
    assert isinstance(blob, types.BlobResourceContents)
    assert (blob.mime_type, base64.b64decode(blob.blob)) == ("image/png", b"\x00\x01")
    assert templated.contents[0].mime_type == "application/json"
    assert isinstance(templated.contents[0], types.TextResourceContents)
    assert templated.contents[0].text == '{"user":"ada"}'
    assert isinstance(method.contents[0], types.TextResourceContents)
    assert method.contents[0].text == "three books"


async def test_an_unknown_uri_is_invalid_params_with_the_uri(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    async with connect(url) as client:
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("mem://nothing")
        with pytest.raises(MCPError) as failing:
            await client.read_resource("mem://users/nobody/profile")
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert isinstance(unknown.value.error.data, dict) and unknown.value.error.data["uri"] == "mem://nothing"
    assert "no such user" in failing.value.error.message


async def test_list_results_carry_caching_hints(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    async with connect(url) as client:
        results = [
            await client.list_tools(),
            await client.list_prompts(),
            await client.list_resources(),
            await client.list_resource_templates(),
            await client.read_resource("mem://greeting"),
        ]
    assert [r.cache_scope for r in results] == ["public"] * 5  # an open gateway: everyone sees the same
    assert [r.ttl_ms for r in results] == [60_000, 60_000, 60_000, 60_000, 0]


async def test_a_namespace_path_serves_its_own_resources(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory, "library")
    async with connect(url) as client:
        listed = await client.list_resources()
        with pytest.raises(MCPError):
            await client.read_resource("mem://greeting")
    assert [str(r.uri) for r in listed.resources] == ["library://catalogue"]


async def test_resource_subscriptions_are_accepted_in_the_handshake_era(
    gateway_factory: StartGateway,
) -> None:
    url = await start(gateway_factory)
    async with connect(url, mode="legacy") as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # removed in 2026, still 2025's
            await client.subscribe_resource("mem://greeting")
            await client.unsubscribe_resource("mem://greeting")
            with pytest.raises(MCPError):
                await client.subscribe_resource("mem://nothing")


@pytest.mark.parametrize("mode", ERAS)
async def test_prompts_are_listed_and_rendered(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    async with connect(url, mode=mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        simple = await client.get_prompt("greet", {"name": "Ada", "tone": "formal"})
        media = await client.get_prompt("with_media", {"uri": "mem://x"})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("greet", {})
        with pytest.raises(MCPError):
            await client.get_prompt("echo", {"text": "a tool is not a prompt"})
    assert set(prompts) == {"greet", "with_media"}
    assert prompts["greet"].title == "Greet"
    assert prompts["greet"].arguments == [
        types.PromptArgument(name="name", description="Who to greet.", required=True),
        types.PromptArgument(name="tone", description="How.", required=False),
    ]
    assert simple.messages == [
        types.PromptMessage(role="user", content=types.TextContent(text="Greet Ada in a formal way."))
    ]
    image, embedded, answer = media.messages
    assert isinstance(image.content, types.ImageContent) and image.content.mime_type == "image/png"
    assert isinstance(embedded.content, types.EmbeddedResource)
    assert embedded.content.resource == types.TextResourceContents(
        uri="mem://x", mime_type="text/plain", text="embedded text"
    )
    assert answer == types.PromptMessage(role="assistant", content=types.TextContent(text="ok"))
    assert missing.value.error.code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", ERAS)
async def test_completion(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    greet = types.PromptReference(name="greet")
    async with connect(url, mode=mode) as client:
        names = await client.complete(greet, {"name": "name", "value": "a"})
        formal = await client.complete(greet, {"name": "name", "value": "dr"}, {"tone": "formal"})
        tones = await client.complete(greet, {"name": "tone", "value": "f"})
        users = await client.complete(
            types.ResourceTemplateReference(uri="mem://users/{user}/profile"), {"name": "user", "value": "u"}
        )
        with pytest.raises(MCPError):
            await client.complete(types.PromptReference(name="nope"), {"name": "x", "value": ""})
    assert names.completion.values == ["ada", "alan"]
    assert formal.completion.values == ["Dr. Ada", "Dr. Alan"]
    assert tones.completion.values == ["formal"]  # a Literal argument completes from its values
    assert len(users.completion.values) == 100
    assert (users.completion.total, users.completion.has_more) == (150, True)


async def test_resource_updates_reach_listen_streams_subscribed_to_them(
    gateway_factory: StartGateway,
) -> None:
    url = await start(gateway_factory)
    async with connect(url) as client:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe
        async with client.listen(resource_subscriptions=["mem://users/ada/profile"]) as subscription:
            assert not (await client.call_tool("touch", {"user": "bob"})).is_error  # not subscribed to
            assert not (await client.call_tool("touch_sync", {"uri": "mem://users/ada/profile"})).is_error
            with anyio.fail_after(10):
                event = await anext(aiter(subscription))
        unknown = await client.call_tool("touch_sync", {"uri": "mem://nothing"})
    assert event == ResourceUpdated(uri="mem://users/ada/profile")
    assert unknown.is_error and "Resource not found" in unknown.content[0].text  # type: ignore[union-attr]


async def raw_post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    """POST as bytes on a socket: HTTP clients refuse header values with surrounding whitespace,
    which RFC 9110 lets a server receive (and tells it to strip)."""
    parsed = httpx2.URL(url)
    reader, writer = await asyncio.open_connection(parsed.host, parsed.port)
    head = f"POST {parsed.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n"
    head += "".join(f"{key}: {value}\r\n" for key, value in headers.items())
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    status_line, _, rest = answer.decode().partition("\r\n")
    return int(status_line.split()[1]), rest


@pytest.mark.parametrize(("name", "status"), [("  echo\t", 200), ("echo", 200), ("ech o", 400)])
async def test_mcp_header_values_are_compared_without_surrounding_whitespace(
    gateway_factory: StartGateway, name: str, status: int
) -> None:
    url = await start(gateway_factory)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    code, text = await raw_post(url, headers, json.dumps(body).encode())
    assert code == status, text
    assert ('"code":-32020' in text.replace(" ", "")) == (status == 400)
