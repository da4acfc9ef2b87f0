"""The official MCP test server (npm `@modelcontextprotocol/server-everything`, installed by
.ci/run) as a runtime, over Streamable HTTP (`mcp_url`) and over stdio (`mcp_command`)."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import httpx
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.conftest import require_tool
from tests.gateway.conftest import StartGateway
from tests.gateway.sources.mcp_servers import EVERYTHING_MAIN, everything_server
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.sources.remote_mcp.http_session import PROTOCOL_VERSIONS, McpHttpSession


async def check_tools(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        listed = (await http.get("/v1/functions")).json()["functions"]
        functions: dict[str, Any] = {f["name"]: f for f in listed}
        assert {"everything.echo", "everything.get_sum"} <= set(functions), sorted(functions)
        # Roots are offered only with `roots = true`, and the server lists its roots tool only then.
        assert "everything.get_roots_list" not in functions
        assert functions["everything.echo"]["parameters"]["required"] == ["message"]
        echoed = (await http.post("/v1/functions/everything.echo/invoke", json={"message": "hi"})).json()
        assert echoed["is_error"] is False and echoed["content"][0]["text"] == "Echo: hi"
        summed = (await http.post("/v1/functions/everything.get_sum/invoke", json={"a": 2, "b": 40})).json()
        assert "42" in summed["content"][0]["text"]


async def check_features(url: str) -> None:
    """Its resources, resource templates and prompts, under the runtime's namespace on /mcp."""
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        assert {"everything__simple_prompt", "everything__args_prompt"} <= prompts
        assert "demo://resource/dynamic/text/{resourceId}" in {t.uri_template for t in templates}
        document = await client.read_resource(resources[0].uri)
        assert document.contents and document.contents[0].text  # type: ignore[union-attr]
        dynamic = await client.read_resource("demo://resource/dynamic/text/1")
        assert dynamic.contents and dynamic.contents[0].text  # type: ignore[union-attr]
        simple = await client.get_prompt("everything__simple_prompt", {})
        assert simple.messages and simple.messages[0].role == "user"
        argued = await client.get_prompt("everything__args_prompt", {"city": "Paris", "state": "TX"})
        assert "Paris" in argued.messages[0].content.text  # type: ignore[union-attr]
    async with httpx.AsyncClient(base_url=url, timeout=30) as plain:
        listed = (await plain.get("/v1/resources")).json()["resources"]
        dynamic_uri = "demo://resource/dynamic/text/{resourceId}"
        assert {"uri": dynamic_uri, "template": True}.items() <= next(
            r for r in listed if r["uri"] == dynamic_uri
        ).items()
        read = await plain.get("/v1/resources/read", params={"uri": "demo://resource/dynamic/text/2"})
        assert read.status_code == 200 and read.json()["content"][0]["text"]


async def check_completions(url: str) -> None:
    """The server's own completions of a prompt's and a resource template's arguments, asked of
    the server through the gateway."""
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        team = types.PromptReference(name="everything__completable_prompt")
        departments = await client.complete(team, {"name": "department", "value": "S"})
        people = await client.complete(team, {"name": "name", "value": ""}, {"department": "Sales"})
        template = types.ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}")
        ids = await client.complete(template, {"name": "resourceId", "value": "1"})
    assert departments.completion.values == ["Sales", "Support"]
    assert people.completion.values == ["David", "Eve", "Frank"]
    assert ids.completion.values and all(v.startswith("1") for v in ids.completion.values), ids


async def test_over_streamable_http(gateway_factory: StartGateway) -> None:
    everything = everything_server().start()
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            session = McpHttpSession(http, everything.url, {})
            await session.request("tools/list")
            # Not a server of the per-request era: the gateway shook hands.
            assert session.version in PROTOCOL_VERSIONS
            await session.close()
        gateway = await gateway_factory(RuntimeConfig(name="everything", mcp_url=everything.url))
        await check_tools(gateway.url)
        await check_features(gateway.url)
        await check_completions(gateway.url)
    finally:
        everything.kill()


async def test_over_stdio(gateway_factory: StartGateway) -> None:
    everything_server()  # skips (or fails under TOOLMESH_REQUIRE_E2E) when it is not installed
    node = require_tool("node", "Node.js 20+")
    gateway = await gateway_factory(
        RuntimeConfig(
            name="everything", mcp_command=(node, str(EVERYTHING_MAIN), "stdio"), startup_timeout=60
        )
    )
    await check_tools(gateway.url)
    await check_features(gateway.url)
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        # The server's own completions, through the gateway (a stdio server's only, for now).
        team = types.PromptReference(name="everything__completable_prompt")
        departments = await client.complete(team, {"name": "department", "value": "S"})
        people = await client.complete(team, {"name": "name", "value": ""}, {"department": "Sales"})
    assert departments.completion.values == ["Sales", "Support"]
    assert people.completion.values == ["David", "Eve", "Frank"]


class Caller:
    """An MCP client's side of what the server asks through the gateway: the user's form and the
    caller's model, and what each was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        prompt = params.messages[0].content
        self.asked.append(prompt.text if isinstance(prompt, types.TextContent) else "?")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="a frog jumps in"), model="test-model"
        )


async def check_roots(url: str) -> None:
    """The server's `roots/list` during a call is the call's ask: an MCP client gives its roots
    (either era); an HTTP caller has none to give, and the call goes on."""
    asked: list[str] = []

    async def roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/repo", name="repo")])

    for mode in ("auto", "legacy"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots, from 2026-07-28
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(
                    streamable_http_client(f"{url}/mcp", http_client=http),
                    mode=mode,
                    list_roots_callback=roots,
                ) as client,
            ):
                listed = await client.call_tool("everything__get_roots_list", {})
        assert not listed.is_error, listed
        assert "file:///work/repo" in str(listed.content) and "repo" in str(listed.content), (mode, listed)
    assert asked, "the caller was never asked for its roots"
    async with httpx.AsyncClient(base_url=url, timeout=30) as plain:
        # server-everything keeps the roots it was given for its session (the docs warn of it).
        listed = await plain.post("/v1/functions/everything.get_roots_list/invoke", json={})
        assert listed.status_code == 200, listed.text
        assert listed.json()["is_error"] is False


async def check_asks(url: str) -> None:
    """The server's elicitation and sampling requests during a tool call are the call's asks: an
    MCP client answers them (either era), an HTTP caller is told it cannot (409)."""
    for mode in ("auto", "legacy"):
        caller = Caller()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # sampling, from 2026-07-28
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                Client(
                    streamable_http_client(f"{url}/mcp", http_client=http),
                    mode=mode,
                    elicitation_callback=caller.elicit,
                    sampling_callback=caller.sample,
                ) as client,
            ):
                elicited = await client.call_tool("everything__trigger_elicitation_request", {})
                sampled = await client.call_tool(
                    "everything__trigger_sampling_request", {"prompt": "frogs", "maxTokens": 20}
                )
        assert not elicited.is_error, elicited
        assert "Ada Lovelace" in str(elicited.content), elicited
        assert not sampled.is_error, sampled
        assert "a frog jumps in" in str(sampled.content) and "test-model" in str(sampled.content)
        assert caller.asked == [
            "Please provide inputs for the following fields:",
            "Resource trigger-sampling-request context: frogs",
        ], mode
    async with httpx.AsyncClient(base_url=url, timeout=30) as plain:
        refused = await plain.post("/v1/functions/everything.trigger_elicitation_request/invoke", json={})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "input_required"
        assert "MCP client" in refused.json()["error"]["message"]
        # The server was told the call is over and serves the next one.
        echoed = await plain.post("/v1/functions/everything.echo/invoke", json={"message": "hi"})
        assert echoed.json()["content"][0]["text"] == "Echo: hi"


async def test_stdio_server_asks_reach_the_caller(gateway_factory: StartGateway) -> None:
    everything_server()  # skips (or fails under TOOLMESH_REQUIRE_E2E) when it is not installed
    node = require_tool("node", "Node.js 20+")
    gateway = await gateway_factory(
        RuntimeConfig(
            name="everything", mcp_command=(node, str(EVERYTHING_MAIN), "stdio"), startup_timeout=60
        )
    )
    await check_asks(gateway.url)


async def test_stdio_server_roots_are_the_callers(gateway_factory: StartGateway) -> None:
    everything_server()  # skips (or fails under TOOLMESH_REQUIRE_E2E) when it is not installed
    node = require_tool("node", "Node.js 20+")
    command = (node, str(EVERYTHING_MAIN), "stdio")
    gateway = await gateway_factory(
        RuntimeConfig(name="everything", mcp_command=command, startup_timeout=60, roots=True)
    )
    await check_roots(gateway.url)


async def test_remote_server_asks_reach_the_caller(gateway_factory: StartGateway) -> None:
    everything = everything_server().start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="everything", mcp_url=everything.url))
        await check_asks(gateway.url)
    finally:
        everything.kill()


async def test_remote_server_roots_are_the_callers(gateway_factory: StartGateway) -> None:
    everything = everything_server().start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="everything", mcp_url=everything.url, roots=True))
        await check_roots(gateway.url)
    finally:
        everything.kill()


async def test_a_stdio_server_gets_none_of_the_gateways_secrets(gateway_factory: StartGateway) -> None:
    # server-everything's `get-env` answers its whole environment. The gateway's own (its keys,
    # what runtimes' headers read) and the pod's (its token to the mesh) stay out; the runtime's
    # `env`, what `inherit_env` names and what every program needs go in.
    everything_server()
    node = require_tool("node", "Node.js 20+")
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": "/home/someone",
        "GITHUB_TOKEN": "a secret of the gateway's",
        "HTTPS_PROXY": "http://proxy.internal:3128",
        "NODE_EXTRA_CA_CERTS": "/etc/ca.pem",
    }
    runtime = RuntimeConfig(
        name="everything",
        mcp_command=(node, str(EVERYTHING_MAIN), "stdio"),
        startup_timeout=60,
        env={"EVERYTHING_MODE": "test"},
        inherit_env=("HTTPS_PROXY", "NODE_*"),
    )
    gateway = await gateway_factory(runtime, environ=environ)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        answer = await http.post("/v1/functions/everything.get_env/invoke", json={})
    assert answer.status_code == 200, answer.text
    seen = json.loads(answer.json()["content"][0]["text"])
    assert seen["EVERYTHING_MODE"] == "test" and seen["HOME"] == "/home/someone"
    assert seen["HTTPS_PROXY"] == "http://proxy.internal:3128"
    assert seen["NODE_EXTRA_CA_CERTS"] == "/etc/ca.pem"
    assert "GITHUB_TOKEN" not in seen
    assert not [name for name in seen if name.startswith("TOOLMESH_") or name.startswith("OTEL_")]
