"""Official stdio MCP servers from npm as a user brings them (installed by .ci/run with
server-everything: tests/gateway/sources/everything/package.json), end to end through a gateway:
`server-memory`, `server-filesystem` (with a directory argument; it asks for roots on its own) and
`server-sequential-thinking` (a property with a list of types), over HTTP, MCP and the OpenAI door."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import missing, require_tool
from tests.gateway.conftest import StartGateway
from tests.gateway.sources.mcp_servers import EVERYTHING
from toolmesh.config import RuntimeConfig


def npm_server(name: str, *arguments: str, **settings: Any) -> RuntimeConfig:
    """The runtime `name` serving npm `@modelcontextprotocol/server-<name>` by its installed file
    (as a user's image does: `npx -y` would download at every start)."""
    node = require_tool("node", "Node.js 20+")
    main = EVERYTHING / "node_modules" / "@modelcontextprotocol" / f"server-{name}" / "dist" / "index.js"
    if not main.is_file():
        missing(f"server-{name} is not installed: npm ci --prefix tests/gateway/sources/everything")
    return RuntimeConfig(name=name, mcp_command=(node, str(main), *arguments), startup_timeout=60, **settings)


async def _invoke(http: httpx.AsyncClient, function: str, arguments: dict[str, Any]) -> Any:
    answer = await http.post(f"/v1/functions/{function}/invoke", json=arguments)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_memory_keeps_a_knowledge_graph(gateway_factory: StartGateway, tmp_path: Path) -> None:
    store = tmp_path / "memory.jsonl"
    gateway = await gateway_factory(npm_server("memory", env={"MEMORY_FILE_PATH": str(store)}))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        listed = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
        assert {"memory.create_entities", "memory.read_graph", "memory.delete_entities"} <= listed
        entities = [
            {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
            {"name": "Engine", "entityType": "machine", "observations": []},
        ]
        created = await _invoke(http, "memory.create_entities", {"entities": entities})
        assert created["is_error"] is False and len(created["structured"]["entities"]) == 2
        relation = {"from": "Ada", "to": "Engine", "relationType": "programs"}
        await _invoke(http, "memory.create_relations", {"relations": [relation]})
        # A nested array of objects is checked in the pod: a relation without its type is a 422.
        wrong = await http.post(
            "/v1/functions/memory.create_relations/invoke", json={"relations": [{"from": "A"}]}
        )
        assert wrong.status_code == 422 and "relationType" in wrong.text
        found = (await _invoke(http, "memory.search_nodes", {"query": "Ada"}))["structured"]
        assert [e["name"] for e in found["entities"]] == ["Ada"] and found["relations"] == [relation]
    # An MCP client gets the graph as structured content, and the server's own resource.
    async with (
        httpx2.AsyncClient(timeout=60) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
    ):
        graph = await client.call_tool("memory__read_graph", {})
        assert not graph.is_error and graph.structured_content is not None
        assert {e["name"] for e in graph.structured_content["entities"]} == {"Ada", "Engine"}
    assert "Ada" in await asyncio.to_thread(store.read_text)


async def test_filesystem_serves_the_directory_it_was_given(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    (root / "hello.txt").write_text("hello\n")
    # `roots = true`: the server asks for roots once, just after `initialize`, outside any call, so
    # it is declined and the server keeps the directory of its command line.
    gateway = await gateway_factory(npm_server("filesystem", str(root), roots=True))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        allowed = await _invoke(http, "filesystem.list_allowed_directories", {})
        assert str(root) in allowed["structured"]["content"]
        path = str(root / "notes.txt")
        await _invoke(http, "filesystem.write_file", {"path": path, "content": "one\ntwo\n"})
        edit = {"path": path, "edits": [{"oldText": "two", "newText": "three"}]}
        edited = await _invoke(http, "filesystem.edit_file", edit)
        assert "+three" in edited["structured"]["content"]
        read = await _invoke(http, "filesystem.read_text_file", {"path": path, "head": 1})
        assert read["structured"]["content"] == "one"
        (root / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        image = await _invoke(http, "filesystem.read_media_file", {"path": str(root / "dot.png")})
        assert [(item["type"], item["mime_type"]) for item in image["content"]] == [("binary", "image/png")]
        # Other bytes are an embedded resource, passed on as one (not as text holding its JSON).
        (root / "data.bin").write_bytes(b"\x00\x01")
        blob = await _invoke(http, "filesystem.read_media_file", {"path": str(root / "data.bin")})
        assert blob["content"] == [
            {
                "type": "resource",
                "uri": (root / "data.bin").as_uri(),
                "mime_type": "application/octet-stream",
                "blob": "AAE=",
            }
        ]
        refused = await _invoke(http, "filesystem.read_text_file", {"path": "/etc/hostname"})
        assert refused["is_error"] is True and "Access denied" in refused["error"]["message"]
        missing_path = await http.post("/v1/functions/filesystem.read_text_file/invoke", json={"head": 1})
        assert missing_path.status_code == 422 and "path" in missing_path.text

    async def roots(_: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///elsewhere")])

    async with (
        httpx2.AsyncClient(timeout=60) as mcp_http,
        Client(
            streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http), list_roots_callback=roots
        ) as client,
    ):
        listing = await client.call_tool("filesystem__list_directory", {"path": str(root)})
    assert not listing.is_error and "[FILE] hello.txt" in json.dumps(listing.structured_content)


async def test_sequential_thinking_takes_a_list_of_types(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(npm_server("sequential-thinking"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        tools = {f["name"]: f for f in (await http.get("/v1/functions")).json()["functions"]}
        schema = tools["sequential-thinking.sequentialthinking"]["parameters"]
        assert schema["properties"]["nextThoughtNeeded"]["type"] == ["boolean", "string"]
        step = {"thought": "first", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
        first = await _invoke(http, "sequential-thinking.sequentialthinking", step)
        assert first["structured"]["thoughtNumber"] == 1 and first["structured"]["nextThoughtNeeded"] is True
        wrong = await http.post(
            "/v1/functions/sequential-thinking.sequentialthinking/invoke", json={**step, "thoughtNumber": 0}
        )
        assert wrong.status_code == 422 and "thoughtNumber" in wrong.text
        # The OpenAI door: a model's tool call, with the string form of the boolean.
        arguments = {**step, "thought": "second", "thoughtNumber": 2, "nextThoughtNeeded": "false"}
        call = {"name": "sequential-thinking__sequentialthinking", "arguments": json.dumps(arguments)}
        answered = await http.post(
            "/v1/tool_calls", json={"tool_calls": [{"id": "c1", "type": "function", "function": call}]}
        )
        assert answered.status_code == 200, answered.text
        message = answered.json()["messages"][0]
        assert (
            message["tool_call_id"] == "c1" and json.loads(message["content"])["nextThoughtNeeded"] is False
        )
