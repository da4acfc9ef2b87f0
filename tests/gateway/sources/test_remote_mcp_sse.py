"""Remote MCP servers over the deprecated HTTP+SSE transport (`mcp_url` at an `/sse` stream): the
Python SDK's MCPServer (its SSE app) and the official npm server-everything (`sse` mode), in
subprocesses, behind a gateway; `mcp_transport` explicit or found out (`auto`)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import ValidationError

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.sources.mcp_servers import ServerProcess, everything_server, free_port, python_server
from tests.gateway.sources.test_everything_server import (
    check_asks,
    check_completions,
    check_features,
    check_roots,
    check_tools,
)
from tests.gateway.sources.test_remote_mcp import (
    User,
    check_calls_after_the_server_comes_back,
    check_count_events,
    check_two_calls_in_flight_decline_roots,
    invoke,
    listing,
)
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.sources.remote_mcp.http_wire import McpHttpError
from toolmesh.gateway.sources.remote_mcp.sse_session import McpSseSession
from toolmesh.gateway.sources.remote_mcp.sse_wire import endpoint_url
from toolmesh.gateway.sources.remote_mcp.transports import AutoSession, open_session


@pytest.fixture
def sse_server() -> Iterator[ServerProcess]:
    process = python_server("--sse").start()
    yield process
    process.kill()


def mcp_client(url: str, http: httpx2.AsyncClient, **callbacks: Any) -> Client:
    return Client(streamable_http_client(f"{url}/mcp", http_client=http), **callbacks)


@pytest.mark.parametrize("transport", ["sse", "auto"])
async def test_tools_are_listed_and_called_over_sse(
    gateway_factory: StartGateway, sse_server: ServerProcess, transport: str
) -> None:
    gateway = await gateway_factory(
        RuntimeConfig(name="clock", mcp_url=sse_server.url, mcp_transport=transport, exclude=("crash",))
    )
    functions = await listing(gateway.url)
    assert {"clock.add", "clock.convert_time", "clock.fail", "clock.count", "clock.greet"} <= set(functions)
    assert functions["clock.add"]["parameters"]["required"] == ["a", "b"]
    added = (await invoke(gateway.url, "clock.add", {"a": 2, "b": 3})).json()
    assert added["is_error"] is False and added["structured"]["total"] == 5
    failed = (await invoke(gateway.url, "clock.fail", {"message": "no luck"})).json()
    assert failed["is_error"] is True and failed["error"]["code"] == "function_error"
    assert "no luck" in failed["error"]["message"]
    async with httpx2.AsyncClient(timeout=30) as http, mcp_client(gateway.url, http) as client:
        assert "clock__convert_time" in {tool.name for tool in (await client.list_tools()).tools}
        results = await asyncio.gather(*(client.call_tool("clock__add", {"a": i, "b": 40}) for i in range(5)))
        zones = (await client.read_resource("clock://zones")).contents[0]
        asked = await client.get_prompt("clock__ask_time", {"zone": "CET"})
        completed = await client.complete(
            types.PromptReference(name="clock__ask_time"), {"name": "zone", "value": "C"}
        )
    # Calls made together share the one stream, each answer matched to its call.
    assert [r.structured_content["total"] for r in results if r.structured_content] == [40, 41, 42, 43, 44]
    assert zones.text == '["UTC", "CET"]'  # type: ignore[union-attr]
    assert asked.messages[0].content.text == "What time is it in CET? Please."  # type: ignore[union-attr]
    assert completed.completion.values == ["CET"]


async def test_auto_finds_each_servers_transport(sse_server: ServerProcess) -> None:
    streamable = python_server("--legacy").start()
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            for server, expected in ((sse_server, "sse"), (streamable, "streamable-http")):
                session = open_session(http, server.url, {}, None, False, "auto")
                assert isinstance(session, AutoSession)
                assert "add" in {tool["name"] for tool in (await session.request("tools/list"))["tools"]}
                assert session.transport == expected
                assert session.version == "2025-11-25"
                await session.close()
    finally:
        streamable.kill()


async def test_a_wrong_explicit_transport_is_a_clear_error(
    gateway_factory: StartGateway, sse_server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    streamable = python_server("--legacy").start()
    try:
        await gateway_factory(
            RuntimeConfig(name="wrong", mcp_url=sse_server.url, mcp_transport="streamable-http"),
            RuntimeConfig(name="other", mcp_url=streamable.url, mcp_transport="sse"),
            RuntimeConfig(name="right", mcp_url=sse_server.url),
        )
        assert f"runtime 'wrong': MCP server {sse_server.url}: initialize answered 405" in caplog.text
        assert (
            f"runtime 'other': MCP server {streamable.url}: GET for an event stream answered" in caplog.text
        )
    finally:
        streamable.kill()


async def test_headers_go_with_the_streams_get_and_every_post(gateway_factory: StartGateway) -> None:
    guarded = python_server("--sse", "--token", "s3cret").start()
    try:
        gateway = await gateway_factory(
            RuntimeConfig(name="clock", mcp_url=guarded.url, headers={"Authorization": "Bearer s3cret"}),
            RuntimeConfig(name="bare", mcp_url=guarded.url, mcp_transport="sse", startup_timeout=5),
        )
        answer = (await invoke(gateway.url, "clock.whoami", {})).json()
        assert answer["structured"] == {"result": "Bearer s3cret"}
        async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
            assert (await http.get("/readyz")).json()["runtimes"] == {"clock": True, "bare": False}
    finally:
        guarded.kill()


async def test_progress_and_log_messages_reach_the_caller_who_asked(
    gateway_factory: StartGateway, sse_server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=sse_server.url))
    await check_count_events(gateway.url)


async def test_with_another_call_in_flight_progress_still_arrives_and_log_messages_do_not(
    gateway_factory: StartGateway, sse_server: ServerProcess
) -> None:
    """Progress names its call (its token); a log message names none, so with two calls in flight
    it is dropped rather than shown to a caller it may not be about."""
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=sse_server.url))
    napping = asyncio.ensure_future(invoke(gateway.url, "clock.nap", {"seconds": 3}))
    await asyncio.sleep(0.3)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        asked = await http.post(
            "/v1/functions/clock.count/invoke?progress=true&log_level=info",
            json={"n": 2},
            headers={"accept": "text/event-stream"},
        )
    assert not napping.done()
    assert (await napping).status_code == 200
    names = [block.split("\n")[0].removeprefix("event: ") for block in asked.text.strip().split("\n\n")]
    assert names == ["progress", "progress", "result"]


async def test_the_servers_questions_reach_the_one_caller_in_flight(
    gateway_factory: StartGateway, sse_server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=sse_server.url))
    user = User()
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        mcp_client(gateway.url, http, elicitation_callback=user.elicit) as client,
    ):
        greeted = await client.call_tool("clock__greet", {})
    assert not greeted.is_error, greeted
    assert "Hello Ada, glad you are well." in str(greeted.content)
    assert sorted(user.asked) == ["How are you?", "What is your name?"]
    refused = await invoke(gateway.url, "clock.greet", {})
    assert refused.status_code == 409, refused.text
    # The server was told the call is over, and serves the next one.
    assert (await invoke(gateway.url, "clock.add", {"a": 1, "b": 2})).status_code == 200


async def test_roots_are_the_callers(gateway_factory: StartGateway, sse_server: ServerProcess) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=sse_server.url, roots=True))

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/data", name="data")])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots, from 2026-07-28
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            mcp_client(gateway.url, http, list_roots_callback=roots) as client,
        ):
            where = await client.call_tool("clock__where", {})
    assert "data=file:///srv/data" in str(where.content), where
    assert "no roots" in (await invoke(gateway.url, "clock.where", {})).text


async def test_a_servers_request_with_two_calls_in_flight_is_declined(gateway_factory: StartGateway) -> None:
    """Nothing on the one stream says whose a server's request is: with one call in flight it is that
    call's (an HTTP caller's: no roots), with two the server is told no one answers it."""
    await check_two_calls_in_flight_decline_roots(gateway_factory, "--sse")


async def test_a_caller_who_gives_up_cancels_the_call_on_the_server(
    gateway_factory: StartGateway, sse_server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=sse_server.url, timeout=0.5))
    slow = await invoke(gateway.url, "clock.cancellable_nap", {"seconds": 30})
    assert slow.status_code == 504
    assert "did not answer within 0.5 s" in slow.json()["error"]["message"]
    for _ in range(100):
        if (await invoke(gateway.url, "clock.cancelled_naps", {})).json()["structured"] == {"result": 1}:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the server never heard notifications/cancelled")


@pytest.mark.slow
async def test_calls_after_the_server_comes_back_succeed(
    gateway_factory: StartGateway, sse_server: ServerProcess
) -> None:
    await check_calls_after_the_server_comes_back(gateway_factory, sse_server)


async def test_a_server_killed_during_a_call_fails_it_at_once(
    gateway_factory: StartGateway, sse_server: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=sse_server.url, timeout=60))
    calling = asyncio.ensure_future(invoke(gateway.url, "clock.nap", {"seconds": 30}))
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await asyncio.to_thread(sse_server.kill)
    failed = await asyncio.wait_for(calling, 10)
    assert time.monotonic() - started < 5
    assert failed.status_code == 503, failed.text
    message = failed.json()["error"]["message"]
    assert "runtime 'clock'" in message and "event stream was lost" in message
    await asyncio.to_thread(sse_server.start)
    assert (await invoke(gateway.url, "clock.add", {"a": 1, "b": 1})).status_code == 200


async def test_a_silent_dead_stream_is_found_by_its_heartbeat(sse_server: ServerProcess) -> None:
    """A server that stops answering without closing its stream (stopped, a dropped network): the
    ping after a silent heartbeat goes unanswered, the call waiting fails, nothing hangs."""
    async with httpx.AsyncClient(timeout=30) as http:
        session = McpSseSession(http, sse_server.url, {}, heartbeat=0.5, ping_timeout=0.5)
        await session.request("tools/list")
        napping = asyncio.ensure_future(
            session.request("tools/call", {"name": "nap", "arguments": {"seconds": 30}})
        )
        await asyncio.sleep(0.2)
        assert sse_server.process is not None
        os.kill(sse_server.process.pid, signal.SIGSTOP)
        try:
            with pytest.raises(McpHttpError, match=r"did not answer a ping within 0\.5 s"):
                await asyncio.wait_for(napping, 10)
        finally:
            os.kill(sse_server.process.pid, signal.SIGCONT)
        # The next request opens a new stream.
        assert (await session.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))[
            "structuredContent"
        ]["total"] == 3
        await session.close()


async def test_an_unreachable_server_names_itself_and_the_others_serve(
    gateway_factory: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    later = python_server("--sse")
    nowhere = f"http://127.0.0.1:{free_port()}/sse"
    gateway = await gateway_factory(
        runtime("tools"),
        RuntimeConfig(name="later", mcp_url=later.url, mcp_transport="sse", startup_timeout=5),
        RuntimeConfig(name="nothing", mcp_url=nowhere, startup_timeout=5),
    )
    assert f"runtime 'later': MCP server {later.url}: GET for an event stream" in caplog.text
    assert f"runtime 'nothing': MCP server {nowhere}" in caplog.text
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        assert (await http.get("/readyz")).json()["runtimes"] == {
            "tools": True,
            "later": False,
            "nothing": False,
        }
        assert (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3})).json()["structured"] == 5
        await asyncio.to_thread(later.start)
        try:
            assert (await http.post("/v1/admin/reload", json={"runtime": "later"})).status_code == 200
            added = await http.post("/v1/functions/later.add/invoke", json={"a": 2, "b": 2})
            assert added.json()["structured"]["total"] == 4
        finally:
            await asyncio.to_thread(later.kill)


async def test_a_servers_list_changed_is_followed(gateway_factory: StartGateway) -> None:
    growing = python_server("--sse", "--growing").start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="clock", mcp_url=growing.url))
        assert "clock.grown" not in await listing(gateway.url)
        assert (await invoke(gateway.url, "clock.grow", {})).json()["structured"] == {"result": "grew"}
        for _ in range(200):
            if "clock.grown" in await listing(gateway.url):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("list_changed on the event stream was not followed")
    finally:
        growing.kill()


def test_the_endpoint_is_resolved_against_the_stream_and_held_to_its_origin() -> None:
    stream = "https://mcp.example.org/v1/sse"
    assert (
        endpoint_url(stream, "/messages/?session_id=ab") == "https://mcp.example.org/messages/?session_id=ab"
    )
    assert endpoint_url(stream, "message?sessionId=1") == "https://mcp.example.org/v1/message?sessionId=1"
    assert endpoint_url(stream, "https://mcp.example.org:443/m") == "https://mcp.example.org/m"
    for elsewhere in ("https://evil.example.org/m", "http://mcp.example.org/m", "//evil.example.org/m"):
        with pytest.raises(McpHttpError, match="another origin"):
            endpoint_url(stream, elsewhere)


async def test_server_everything_over_sse(gateway_factory: StartGateway) -> None:
    everything = everything_server("sse").start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="everything", mcp_url=everything.url))
        await check_tools(gateway.url)
        await check_features(gateway.url)
        await check_completions(gateway.url)
        await check_asks(gateway.url)
    finally:
        everything.kill()


async def test_server_everything_roots_over_sse(gateway_factory: StartGateway) -> None:
    everything = everything_server("sse").start()
    try:
        gateway = await gateway_factory(
            RuntimeConfig(name="everything", mcp_url=everything.url, mcp_transport="sse", roots=True)
        )
        await check_roots(gateway.url)
    finally:
        everything.kill()


def test_mcp_transport_goes_with_mcp_url_and_names_a_transport() -> None:
    with pytest.raises(ValidationError, match="`mcp_transport` goes with `mcp_url`"):
        RuntimeConfig(name="t", openapi="shop.json", mcp_transport="sse")
    with pytest.raises(ValidationError, match="'auto', 'streamable-http' or 'sse'"):
        RuntimeConfig(name="t", mcp_url="http://m/sse", mcp_transport="websocket")  # type: ignore[arg-type]
    assert RuntimeConfig(name="t", mcp_url="http://m/sse").mcp_transport == "auto"
