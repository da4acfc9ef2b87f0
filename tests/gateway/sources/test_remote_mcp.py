"""Remote MCP servers (`mcp_url`) as runtimes: real Streamable HTTP servers in subprocesses (the
Python SDK's MCPServer; the official npm server-everything in test_everything_server.py), a gateway
serving their tools."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.sources.mcp_servers import ServerProcess, free_port, python_server
from toolmesh.config import KeyConfig, RuntimeConfig, hash_key
from toolmesh.config.runtime_config import HeaderFromEnv
from toolmesh.gateway.sources.remote_mcp.http_session import McpHttpSession


@pytest.fixture(params=["sse", "json", "handshake"])
def server(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    """The SDK's server answering as event streams or as JSON bodies, in the per-request era
    (2026-07-28), or refusing it so that the handshake era is spoken (answering as streams)."""
    flags = {"sse": [], "json": ["--json"], "handshake": ["--legacy"]}[request.param]
    process = python_server(*flags)
    process.start()
    yield process
    process.kill()


async def listing(url: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        found = (await http.get("/v1/functions")).json()["functions"]
    return {f["name"]: f for f in found}


async def invoke(url: str, name: str, arguments: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        return await http.post(f"/v1/functions/{name}/invoke", json=arguments, headers=headers)


async def test_tools_are_functions_called_over_http_and_mcp(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url, exclude=("crash",)))
    functions = await listing(gateway.url)
    assert set(functions) == {
        "clock.add",
        "clock.convert_time",
        "clock.fail",
        "clock.whoami",
        "clock.nap",
        "clock.count",
        "clock.greet",
        "clock.greet_aside",
        "clock.where",
    }
    assert functions["clock.add"]["parameters"]["required"] == ["a", "b"]
    assert functions["clock.add"]["description"] == "Add two integers."
    added = (await invoke(gateway.url, "clock.add", {"a": 2, "b": 3})).json()
    assert added["is_error"] is False and added["structured"]["total"] == 5
    # The tool's own name ("convert.time") is what the server is asked for.
    converted = (await invoke(gateway.url, "clock.convert_time", {"time": "12:00", "zone": "CET"})).json()
    assert converted["structured"] == {"result": "12:00 in CET"}
    failed = (await invoke(gateway.url, "clock.fail", {"message": "no luck"})).json()
    assert failed["is_error"] is True and failed["error"]["code"] == "function_error"
    assert "no luck" in failed["error"]["message"]
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "clock__convert_time" in tools
        result = await client.call_tool("clock__add", {"a": 20, "b": 22})
    assert not result.is_error
    assert result.structured_content is not None and result.structured_content["total"] == 42


async def test_headers_come_from_the_environment_never_from_the_caller(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    auth = {"Authorization": HeaderFromEnv(env="CLOCK_TOKEN", prefix="Bearer ")}
    keyed = await gateway_factory(
        RuntimeConfig(name="clock", mcp_url=server.url, headers=auth),
        keys=[KeyConfig(name="caller", key_hash=hash_key("caller-key"), scopes=("*",))],
        environ={"CLOCK_TOKEN": "s3cret"},
    )
    answer = (await invoke(keyed.url, "clock.whoami", {}, authorization="Bearer caller-key")).json()
    assert answer["structured"] == {"result": "Bearer s3cret"}
    bare = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
    answer = (await invoke(bare.url, "clock.whoami", {}, authorization="Bearer caller-key")).json()
    assert answer["structured"] == {"result": "none"}


async def test_a_slow_tool_times_out_after_the_runtimes_limit(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url, timeout=0.3))
    slow = await invoke(gateway.url, "clock.nap", {"seconds": 2})
    assert slow.status_code == 504
    assert "did not answer within 0.3 s" in slow.json()["error"]["message"]
    assert (await invoke(gateway.url, "clock.nap", {"seconds": 0})).json()["structured"] == {
        "result": "rested"
    }


@pytest.mark.slow
async def test_calls_after_the_server_comes_back_succeed(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    await check_calls_after_the_server_comes_back(gateway_factory, server)


async def check_calls_after_the_server_comes_back(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    """The server killed while calls race it, then started again, round after round: on either
    transport (test_remote_mcp_sse.py too), the next call makes the session again and answers."""
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        for round_ in range(4):
            # Calls racing the kill may fail (503, naming the runtime); none may hang or be a 500.
            calls = [
                http.post("/v1/functions/clock.add/invoke", json={"a": round_, "b": i}) for i in range(5)
            ]
            racing = asyncio.gather(*calls)
            await asyncio.sleep(0.01 * round_)
            await asyncio.to_thread(server.kill)
            for response in await racing:
                assert response.status_code in (200, 503), response.text
            down = await http.post("/v1/functions/clock.add/invoke", json={"a": 1, "b": 1})
            assert down.status_code == 503
            assert "runtime 'clock': MCP server" in down.json()["error"]["message"]
            await asyncio.to_thread(server.start)
            # A new process: the old session (or stream) is gone, so the gateway makes a new one.
            back = await http.post("/v1/functions/clock.add/invoke", json={"a": round_, "b": 1})
            assert back.status_code == 200, back.text
            assert back.json()["structured"]["total"] == round_ + 1


async def test_an_unreachable_server_names_itself_the_others_serve_and_a_reload_finds_it(
    gateway_factory: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    later = python_server()
    gateway = await gateway_factory(
        runtime("tools"),
        RuntimeConfig(name="later", mcp_url=later.url, startup_timeout=5),
        RuntimeConfig(name="nothing", mcp_url=f"http://127.0.0.1:{free_port()}/mcp", startup_timeout=5),
    )
    assert f"runtime 'later': MCP server {later.url}" in caplog.text
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        ready = (await http.get("/readyz")).json()["runtimes"]
        assert ready == {"tools": True, "later": False, "nothing": False}
        assert (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3})).json()["structured"] == 5
        await asyncio.to_thread(later.start)
        try:
            reloaded = await http.post("/v1/admin/reload", json={"runtime": "later"})
            assert reloaded.status_code == 200, reloaded.text
            added = await http.post("/v1/functions/later.add/invoke", json={"a": 2, "b": 2})
            assert added.json()["structured"]["total"] == 4
        finally:
            await asyncio.to_thread(later.kill)


async def test_the_servers_progress_and_log_messages_reach_a_caller_who_asks(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
    # A server answering with one JSON body has no way to send anything before its answer.
    await check_count_events(gateway.url, streamed=server.command[-1] != "--json")


async def check_count_events(url: str, streamed: bool = True) -> None:
    """`clock.count`'s logs and progress reach the caller who asked for them, in order (when the
    server can send them before its answer: `streamed`), and a caller who did not gets the result."""
    sse = {"accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        invoke_url = "/v1/functions/clock.count/invoke"
        asked = await http.post(f"{invoke_url}?progress=true&log_level=info", json={"n": 2}, headers=sse)
        plain = await http.post(invoke_url, json={"n": 2}, headers=sse)
    events = [
        (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("data: ", 1)[1]))
        for block in asked.text.strip().split("\n\n")
    ]
    if not streamed:
        assert [name for name, _ in events] == ["result"]
    else:
        assert events[:-1] == [
            ("log", {"level": "info", "logger": "clock.count", "data": {"message": "step 1"}}),
            ("progress", {"progress": 1, "total": 2, "message": "step 1 of 2"}),
            ("log", {"level": "info", "logger": "clock.count", "data": {"message": "step 2"}}),
            ("progress", {"progress": 2, "total": 2, "message": "step 2 of 2"}),
        ]
    assert events[-1][0] == "result" and events[-1][1]["structured"] == {"result": 2}
    assert plain.text.count("event: ") == 1


async def test_each_server_is_spoken_to_in_its_own_era(server: ServerProcess) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        session = McpHttpSession(http, server.url, {})
        tools = await session.request("tools/list")
        assert "add" in {tool["name"] for tool in tools["tools"]}
        handshake = server.command[-1] == "--legacy"
        assert session.version == ("2025-11-25" if handshake else "2026-07-28")
        await session.close()


async def test_the_servers_resources_and_prompts_are_the_namespaces(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        resources = {r.name: r for r in (await client.list_resources()).resources}
        assert str(resources["clock__zones"].uri) == "clock://zones"
        assert resources["clock__zones"].mime_type == "application/json"
        zones = (await client.read_resource("clock://zones")).contents[0]
        assert zones.text == '["UTC", "CET"]'  # type: ignore[union-attr]
        templates = {t.name: t for t in (await client.list_resource_templates()).resource_templates}
        assert templates["clock__offset"].uri_template == "clock://zones/{zone}/offset"
        offset = (await client.read_resource("clock://zones/CET/offset")).contents[0]
        assert offset.text == "1"  # type: ignore[union-attr]
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert [(a.name, a.required) for a in prompts["clock__ask_time"].arguments or ()] == [
            ("zone", True),
            ("polite", False),
        ]
        asked = await client.get_prompt("clock__ask_time", {"zone": "CET"})
    assert asked.messages[0].role == "user"
    assert asked.messages[0].content.text == "What time is it in CET? Please."  # type: ignore[union-attr]


async def test_completions_of_the_servers_prompts_and_templates_are_asked_of_it(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        prompt = types.PromptReference(name="clock__ask_time")
        zones = await client.complete(prompt, {"name": "zone", "value": "C"})
        polite = await client.complete(prompt, {"name": "polite", "value": ""}, {"zone": "UTC"})
        template = types.ResourceTemplateReference(uri="clock://zones/{zone}/offset")
        offsets = await client.complete(template, {"name": "zone", "value": "U"})
    assert zones.completion.values == ["CET"]
    # The arguments given so far reach the server.
    assert polite.completion.values == ["no"]
    assert offsets.completion.values == ["UTC"]


class User:
    """An MCP client's user, answering the server's questions through the gateway."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        answers = {"What is your name?": {"name": "Ada"}, "How are you?": {"mood": "well"}}
        return types.ElicitResult(action="accept", content=answers.get(params.message, {"name": "Bob"}))


async def test_the_servers_questions_reach_the_caller_in_either_era(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    """A per-request era server asks with input-required results, a handshake-era one with requests
    on the call's stream: either way the MCP caller answers, and an HTTP caller is told it cannot."""
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
    user = User()
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(
            streamable_http_client(f"{gateway.url}/mcp", http_client=http), elicitation_callback=user.elicit
        ) as client,
    ):
        greeted = await client.call_tool("clock__greet", {})
    assert not greeted.is_error, greeted
    assert "Hello Ada, glad you are well." in str(greeted.content)
    assert sorted(user.asked) == ["How are you?", "What is your name?"]
    refused = await invoke(gateway.url, "clock.greet", {})
    assert refused.status_code == 409, refused.text
    assert "MCP client" in refused.json()["error"]["message"]


async def test_the_servers_roots_list_is_answered_by_the_callers_roots_in_either_era(
    gateway_factory: StartGateway, server: ServerProcess
) -> None:
    """`roots/list` is the call's ask: the MCP caller's roots reach the server; an HTTP caller has
    none to give, and the server is told so (an empty list)."""
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url, roots=True))
    asked: list[str] = []

    async def roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/data", name="data")])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots, from 2026-07-28
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(
                streamable_http_client(f"{gateway.url}/mcp", http_client=http), list_roots_callback=roots
            ) as client,
        ):
            where = await client.call_tool("clock__where", {})
    assert not where.is_error, where
    assert "data=file:///srv/data" in str(where.content)
    assert asked == ["roots"]
    rootless = await invoke(gateway.url, "clock.where", {})
    assert rootless.status_code == 200, rootless.text
    assert "no roots" in rootless.text


async def test_roots_asked_on_the_sessions_own_stream_with_two_calls_in_flight_are_declined(
    gateway_factory: StartGateway,
) -> None:
    """Nothing says whose a request on the standalone stream is: with one call in flight it is that
    call's (an HTTP caller's: no roots), with two the server is told no one answers it."""
    await check_two_calls_in_flight_decline_roots(gateway_factory, "--legacy")


async def check_two_calls_in_flight_decline_roots(gateway_factory: StartGateway, transport: str) -> None:
    """A server's `roots/list` on a stream no call owns (`transport`: the fixture's --legacy
    standalone stream, or its --sse one), with one call in flight, then two."""
    server = python_server(transport, "--roots-aside").start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url, roots=True))
        alone = await invoke(gateway.url, "clock.roots_aside", {})
        assert alone.status_code == 200 and "no roots" in alone.text, alone.text
        both = await asyncio.gather(*(invoke(gateway.url, "clock.roots_aside", {}) for _ in range(2)))
        for answered in both:
            assert answered.status_code == 200, answered.text
            assert "refused: roots/list is answered by a tool call's caller" in answered.text
    finally:
        server.kill()


async def test_a_question_on_the_sessions_own_stream_reaches_the_one_caller_in_flight(
    gateway_factory: StartGateway,
) -> None:
    server = python_server("--legacy").start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=server.url))
        user = User()
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(
                streamable_http_client(f"{gateway.url}/mcp", http_client=http),
                elicitation_callback=user.elicit,
            ) as client,
        ):
            greeted = await client.call_tool("clock__greet_aside", {})
        assert not greeted.is_error, greeted
        assert "Hello Bob" in str(greeted.content)
        assert user.asked == ["Who is there?"]
        refused = await invoke(gateway.url, "clock.greet_aside", {})
        assert refused.status_code == 409, refused.text
        # The server was told the call is over, and serves the next one.
        assert (await invoke(gateway.url, "clock.add", {"a": 1, "b": 2})).status_code == 200
    finally:
        server.kill()


async def test_a_servers_list_changed_is_followed(gateway_factory: StartGateway) -> None:
    """A tool the server adds while serving is served once it says `tools/list_changed`, on a
    call's stream or on its session's own (GET), and MCP callers listening hear list_changed."""
    growing = python_server("--legacy", "--growing").start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=growing.url))
        assert "clock.grown" not in await listing(gateway.url)
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
            client.listen(tools_list_changed=True) as subscription,
        ):
            assert (await invoke(gateway.url, "clock.grow", {})).json()["structured"] == {"result": "grew"}
            with anyio.fail_after(10):
                assert isinstance(await anext(aiter(subscription)), ToolsListChanged)
            assert "clock__grown" in {tool.name for tool in (await client.list_tools()).tools}
        assert (await invoke(gateway.url, "clock.grown", {})).json()["content"][0]["text"] == "new"
        await invoke(gateway.url, "clock.grow_quietly", {})
        for _ in range(200):  # the gateway lists the server again on its own: give it 10 s
            if "clock.grown_quietly" in await listing(gateway.url):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("list_changed on the session's own stream was not followed")
    finally:
        growing.kill()
