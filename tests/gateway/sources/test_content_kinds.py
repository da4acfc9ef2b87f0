"""What federated MCP servers return reaches the gateway's callers as what it is, over both roads
(a stdio server in pods, a remote one over Streamable HTTP): resource links and embedded
resources, content annotations, a tool's and a result's `_meta` (MCP Apps), and a prompt named
like a tool. The MCP door passes them on as MCP content; HTTP, gRPC and the OpenAI door each in
their documented shape."""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import pod_env, require_tool
from tests.fixtures.apps_mcp_server import APP_MIME, VIEW, VIEW_HTML
from tests.gateway.conftest import StartGateway
from tests.gateway.sources.mcp_servers import EVERYTHING_MAIN, ServerProcess, everything_server, free_port
from toolmesh.config import RuntimeConfig
from toolmesh.protocol import wire
from toolmesh.runtimes.functions.results import Resource, Text
from toolmesh.v1 import invoke_pb2, mesh_pb2_grpc

ROADS = ["stdio", "http"]
APPS = (sys.executable, "-m", "tests.fixtures.apps_mcp_server")


@asynccontextmanager
async def mcp_client(url: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def federated(
    gateway_factory: StartGateway,
    road: str,
    name: str,
    stdio: tuple[str, ...],
    http: Callable[[], ServerProcess],
) -> AsyncIterator[tuple[str, str | None]]:
    """A gateway federating a server over `road`: (the gateway's URL, the server's own URL or None)."""
    server = http().start() if road == "http" else None
    try:
        if server is not None:
            runtime = RuntimeConfig(name=name, mcp_url=server.url)
        else:
            runtime = RuntimeConfig(
                name=name, mcp_command=stdio, env={"PYTHONPATH": pod_env()["PYTHONPATH"]}, startup_timeout=60
            )
        gateway = await gateway_factory(runtime)
        yield gateway.url, None if server is None else server.url
    finally:
        if server is not None:
            server.kill()


def apps_http() -> ServerProcess:
    port = free_port()
    return ServerProcess([*APPS, str(port)], port, {"PYTHONPATH": pod_env()["PYTHONPATH"]})


def dumped(result: types.CallToolResult) -> list[dict[str, Any]]:
    return [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in result.content]


def untimed(items: list[dict[str, Any]]) -> str:
    """`items` as JSON without the clock time server-everything writes into its dynamic resources'
    text ("created at 8:53:22 AM"): two reads a second apart say different times."""
    return re.sub(
        r"\d{1,2}:\d{2}:\d{2}\s?[AP]M", "<time>", json.dumps(items, sort_keys=True, ensure_ascii=False)
    )


@pytest.mark.parametrize("road", ROADS)
async def test_an_mcp_app_its_view_and_a_results_meta(gateway_factory: StartGateway, road: str) -> None:
    async with federated(gateway_factory, road, "apps", APPS, apps_http) as (url, _):
        async with mcp_client(f"{url}/mcp") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            # The tool's `_meta` as the server lists it: a host finds the app's view there...
            assert tools["apps__show_chart"].meta == {"ui": {"resourceUri": VIEW}, "note": 1}
            assert tools["apps__annotated"].meta is None
            # ... and reads it through the gateway under the URI the `_meta` names.
            read = await client.read_resource(VIEW)
            assert [(c.uri, c.mime_type, c.text) for c in read.contents] == [  # type: ignore[union-attr]
                (VIEW, APP_MIME, VIEW_HTML)
            ]
            charted = await client.call_tool("apps__show_chart", {"numbers": [1, 2, 3]})
            # The result's `_meta`, less the key the gateway owns (a progress token is the caller's).
            assert charted.meta is not None and charted.meta.get("chart") == {"points": 3}
            assert "progressToken" not in charted.meta
            assert dumped(charted) == [{"type": "text", "text": "charted 3 numbers"}]
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            listed = (await http.get("/v1/functions/apps.show_chart")).json()
            assert listed["meta"] == {"ui": {"resourceUri": VIEW}, "note": 1}
            invoked = await http.post("/v1/functions/apps.show_chart/invoke", json={"numbers": [1]})
            assert invoked.json()["meta"] == {"chart": {"points": 1}}


ANNOTATED = [
    {
        "type": "text",
        "text": "for the user",
        "annotations": {"audience": ["user"], "priority": 0.25, "lastModified": "2026-01-02T03:04:05Z"},
        "_meta": {"line": 1},
    },
    {
        "type": "resource_link",
        "name": "report.pdf",
        "title": "The report",
        "uri": "file:///srv/report.pdf",
        "description": "This quarter's report",
        "mimeType": "application/pdf",
        "size": 1234,
        "annotations": {"priority": 0.5},
    },
    {
        "type": "resource",
        "resource": {"uri": "memo://1", "mimeType": "text/plain", "text": "a memo"},
        "annotations": {"audience": ["assistant"]},
    },
    {
        "type": "resource",
        "resource": {"uri": "memo://2", "mimeType": "application/octet-stream", "blob": "AAEC"},
    },
]


@pytest.mark.parametrize("road", ROADS)
async def test_every_kind_of_content_with_its_annotations(gateway_factory: StartGateway, road: str) -> None:
    async with federated(gateway_factory, road, "apps", APPS, apps_http) as (url, own):
        async with mcp_client(f"{url}/mcp") as client:
            answer = await client.call_tool("apps__annotated", {})
        assert dumped(answer) == ANNOTATED
        if own is not None:  # unchanged: as the server itself answers
            async with mcp_client(own) as direct:
                assert dumped(await direct.call_tool("annotated", {})) == ANNOTATED
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            content = (await http.post("/v1/functions/apps.annotated/invoke", json={})).json()["content"]
            openai = (
                await http.post("/v1/tool_calls", json=[{"name": "apps.annotated", "arguments": {}}])
            ).json()
    # HTTP: toolmesh's own shape (docs/http.md).
    assert content == [
        {
            "type": "text",
            "text": "for the user",
            "annotations": ANNOTATED[0]["annotations"],
            "meta": {"line": 1},
        },
        {
            "type": "resource_link",
            "uri": "file:///srv/report.pdf",
            "name": "report.pdf",
            "title": "The report",
            "description": "This quarter's report",
            "mime_type": "application/pdf",
            "size": 1234,
            "annotations": {"priority": 0.5},
        },
        {
            "type": "resource",
            "uri": "memo://1",
            "mime_type": "text/plain",
            "text": "a memo",
            "annotations": {"audience": ["assistant"]},
        },
        {"type": "resource", "uri": "memo://2", "mime_type": "application/octet-stream", "blob": "AAEC"},
    ]
    # The OpenAI door: text a model can read.
    assert openai["results"][0]["content"].splitlines() == [
        "for the user",
        "[resource_link file:///srv/report.pdf (The report, application/pdf, This quarter's report)]",
        "a memo",
        "[resource memo://2 (application/octet-stream, 3 bytes)]",
    ]


async def test_grpc_callers_get_resources_and_annotations_as_messages(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        RuntimeConfig(
            name="apps", mcp_command=APPS, env={"PYTHONPATH": pod_env()["PYTHONPATH"]}, startup_timeout=60
        )
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
        mesh = mesh_pb2_grpc.MeshStub(channel)
        response = await mesh.Invoke(invoke_pb2.InvokeRequest(function="apps.annotated", arguments=b"{}"))
        charted = await mesh.Invoke(
            invoke_pb2.InvokeRequest(function="apps.show_chart", arguments=b'{"numbers":[]}')
        )
    link = response.content[1]
    assert link.WhichOneof("kind") == "resource" and not link.resource.embedded
    assert (link.resource.uri, link.resource.name, link.resource.size) == (
        "file:///srv/report.pdf",
        "report.pdf",
        1234,
    )
    assert link.annotations == b'{"priority":0.5}'
    blob = response.content[3].resource
    assert blob.embedded and blob.WhichOneof("contents") == "blob" and blob.blob == b"\x00\x01\x02"
    assert response.content[0].meta == b'{"line":1}'
    assert charted.meta == b'{"chart":{"points":0}}'
    result = wire.result_from_proto(response)
    assert result.content[0] == Text(
        "for the user",
        {"audience": ["user"], "priority": 0.25, "lastModified": "2026-01-02T03:04:05Z"},
        {"line": 1},
    )
    assert isinstance(result.content[2], Resource) and result.content[2].text == "a memo"


@pytest.mark.parametrize("road", ROADS)
async def test_a_prompt_and_a_tool_of_the_same_name(gateway_factory: StartGateway, road: str) -> None:
    async with (
        federated(gateway_factory, road, "apps", APPS, apps_http) as (url, _),
        mcp_client(f"{url}/mcp") as client,
    ):
        tools = {t.name for t in (await client.list_tools()).tools}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert "apps__fetch" in tools and "apps__fetch" in prompts
        fetched = await client.call_tool("apps__fetch", {"url": "https://example.com"})
        asked = await client.get_prompt("apps__fetch", {"url": "https://example.com"})
    assert fetched.structured_content == {"result": "fetched https://example.com"}
    assert asked.messages[0].content.text == "Please fetch https://example.com"  # type: ignore[union-attr]


def everything_stdio() -> tuple[str, ...]:
    everything_server()  # skips (or fails under TOOLMESH_REQUIRE_E2E) when it is not installed
    return (require_tool("node", "Node.js 20+"), str(EVERYTHING_MAIN), "stdio")


@pytest.mark.parametrize("road", ROADS)
async def test_server_everythings_links_references_and_annotations(
    gateway_factory: StartGateway, road: str
) -> None:
    stdio = everything_stdio()
    async with federated(gateway_factory, road, "everything", stdio, everything_server) as (url, own):
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_resource_links", {"count": 2}),
            ("get_resource_reference", {"resourceType": "Text", "resourceId": 2}),
            ("get_annotated_message", {"messageType": "success", "includeImage": True}),
        ]
        async with mcp_client(f"{url}/mcp") as client:
            answers = [dumped(await client.call_tool(f"everything__{tool}", args)) for tool, args in calls]
        links, reference, annotated = answers
        assert [item["type"] for item in links] == ["text", "resource_link", "resource_link"]
        assert links[1]["uri"] == "demo://resource/dynamic/blob/1" and links[1]["name"] == "Blob Resource 1"
        assert reference[1]["type"] == "resource"
        assert reference[1]["resource"]["uri"] == "demo://resource/dynamic/text/2"
        assert reference[1]["resource"]["text"]
        assert annotated[0]["annotations"] == {"audience": ["user"], "priority": 0.7}
        assert annotated[1]["type"] == "image" and annotated[1]["annotations"]["priority"] == 0.5
        base64.b64decode(annotated[1]["data"], validate=True)
        if own is not None:  # unchanged: as the server itself answers
            async with mcp_client(own) as direct:
                for (tool, args), answer in zip(calls, answers, strict=True):
                    own_name = tool.replace("_", "-")
                    assert untimed(dumped(await direct.call_tool(own_name, args))) == untimed(answer)
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            linked = await http.post("/v1/functions/everything.get_resource_links/invoke", json={"count": 1})
        assert linked.json()["content"][1] == {
            "type": "resource_link",
            "uri": "demo://resource/dynamic/blob/1",
            "name": "Blob Resource 1",
            # What the server says of it (its links call a blob text/plain).
            "description": "Resource 1: plaintext resource",
            "mime_type": "text/plain",
        }
