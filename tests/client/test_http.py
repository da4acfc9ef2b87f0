"""The Python clients (Client, AsyncClient, GrpcClient) against a real gateway and a real pod.

One gateway per module (starting one spawns a pod), on the module's event loop. Every
HTTP test runs twice, with `AsyncClient` and with `Client`; the sync client runs in a
worker thread so the gateway, on this loop, keeps serving while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from openai.types.chat import ChatCompletionMessage
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from openai.types.responses import ResponseFunctionToolCall

from tests.client.conftest import Connect, Driven, raises
from tests.gateway.conftest import runtime
from toolmesh import (
    AsyncClient,
    Binary,
    Client,
    FunctionError,
    FunctionNotFound,
    FunctionTimeout,
    GrpcClient,
    InternalError,
    InvalidArguments,
    InvalidRequest,
    Json,
    PayloadTooLarge,
    RateLimited,
    Result,
    Text,
    ToolmeshError,
    Unauthenticated,
    Unavailable,
)
from toolmesh.config import GatewayConfig, KeyConfig, MeshConfig, hash_key
from toolmesh.gateway.server import Gateway, start_gateway
from toolmesh.runtimes.functions.results import ErrorInfo

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def serve(*keys: KeyConfig, **settings: Any) -> Gateway:
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0, **settings), runtimes=(runtime(),), keys=keys
    )
    return await start_gateway(config, environ={})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway() -> AsyncIterator[Gateway]:
    """An open gateway serving tests/fixtures/sample_tools.py."""
    started = await serve()
    yield started
    await started.stop(grace=0)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def locked() -> AsyncIterator[Gateway]:
    """A gateway with keys: "secret" may call only `add`, "slow-key" one call a second; 1 KiB bodies."""
    keys = (
        KeyConfig(name="narrow", key_hash=hash_key("secret"), scopes=("add",)),
        KeyConfig(name="slow", key_hash=hash_key("slow-key"), rate=1, burst=1),
    )
    started = await serve(*keys, max_body_bytes=1024)
    yield started
    await started.stop(grace=0)


def grpc_address(gateway: Gateway) -> str:
    return f"127.0.0.1:{gateway.grpc_port}"


@pytest.fixture
def mesh(connect: Connect, gateway: Gateway) -> Driven:
    return connect(gateway.url)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- HTTP: Client and AsyncClient -------------------------------------------------------------


async def test_list_and_get_functions(mesh: Driven) -> None:
    specs = {spec.qualified_name: spec for spec in await mesh.list_functions()}
    assert {"add", "echo", "count", "counter.increment", "counter.current"} <= set(specs)
    increment = specs["counter.increment"]
    assert (increment.namespace, increment.name) == ("counter", "increment")
    add = specs["add"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert add.output_schema == {"type": "integer"}
    assert add.description.startswith("Add two integers.")
    assert (specs["sleepy"].timeout, specs["count"].streaming, add.timeout) == (0.3, True, None)
    assert await mesh.get_function("counter__increment") == increment
    assert await mesh.get_function("add") == add


async def test_invoke_rebuilds_every_kind_of_content(mesh: Driven) -> None:
    added = await mesh.invoke("add", {"a": 2, "b": 40})
    assert (added.is_error, added.content, added.structured_json, added.value) == (
        False,
        [Json(b"42")],
        b"42",
        42,
    )
    assert added.request_id and added.duration_ms > 0 and added.error is None
    echoed = await mesh.invoke("echo", {"text": "héllo"})
    assert echoed.content == [Text("héllo")] and echoed.structured_json is None
    assert (await mesh.invoke("blob")).content == [Binary(b"\x89PNG\r\n\x1a\n", "image/png")]
    assert (await mesh.invoke("mixed")).content == [Text("summary"), Json(b'{"rows":2}')]
    ticks = await mesh.invoke("ticks", {"n": 2})
    assert ticks.content == [Json(b'{"tick":0}'), Json(b'{"tick":1}')]
    tagged = await mesh.invoke("noop", request_id="req-7", session_id="session-1")
    assert tagged.request_id == "req-7" and tagged.content == []


async def test_a_function_that_raised_is_a_result_not_an_exception(mesh: Driven) -> None:
    failed = await mesh.invoke("fail", {"message": "disk full"})
    assert failed.is_error and failed.content == [Text("RuntimeError: disk full")]
    assert failed.error == ErrorInfo("function_error", "RuntimeError: disk full")
    assert type(failed.error.to_exception()) is FunctionError


async def test_refused_calls_raise_the_exact_error(mesh: Driven) -> None:
    not_found = await raises(FunctionNotFound, mesh.invoke("ad"))
    assert not_found.details["suggestions"] == ["add"] and not_found.param == "function"
    await raises(FunctionNotFound, mesh.get_function("nope"))
    with pytest.raises(ToolmeshError):  # the name stays one path segment: echo must not run
        await mesh.invoke("add/../echo", {"text": "x"})
    invalid = await raises(InvalidArguments, mesh.invoke("add", {"a": "one", "z": 1}))
    assert [(v.path, v.expected) for v in invalid.violations] == [("a", "integer"), ("z", "no such argument")]
    assert "a: expected integer" in invalid.message
    bad_format = await raises(InvalidRequest, mesh.tools(format="xml"))
    assert bad_format.param == "format"
    timed_out = await raises(FunctionTimeout, mesh.invoke("sleepy", {"seconds": 5}))
    assert "0.3 s" in timed_out.message
    not_json: dict[str, Any] = {"text": object()}
    await raises(InvalidRequest, mesh.invoke("echo", not_json))


async def test_keys_scopes_body_limit_and_rate_limit(connect: Connect, locked: Gateway) -> None:
    await raises(Unauthenticated, connect(locked.url).list_functions())
    await raises(Unauthenticated, connect(locked.url, api_key="wrong").list_functions())
    narrow = connect(locked.url, api_key="secret")
    assert [spec.qualified_name for spec in await narrow.list_functions()] == ["add"]
    denied = await raises(FunctionNotFound, narrow.invoke("echo", {"text": "x"}))
    assert denied.param == "function" and denied.details["suggestions"] == []
    assert (await narrow.invoke("add", {"a": 1})).structured == 2
    too_large = await raises(PayloadTooLarge, narrow.invoke("add", {"a": 1, "padding": "x" * 2048}))
    assert "1024 bytes" in too_large.message
    slow = connect(locked.url, api_key="slow-key")

    async def until_limited() -> None:
        for _ in range(3):  # burst 1 at one call a second: the second call in a row is over
            await slow.list_functions()  # listing is free
            await slow.invoke("noop")

    limited = await raises(RateLimited, until_limited())
    assert limited.retry_after is not None and limited.retry_after >= 1


async def test_tools_in_every_format(mesh: Driven) -> None:
    chat = await mesh.tools()
    assert "counter__increment" in {tool["function"]["name"] for tool in chat}
    strict = await mesh.tools("openai", strict=True)
    add = next(tool["function"] for tool in strict if tool["function"]["name"] == "add")
    assert add["strict"] is True and add["parameters"]["required"] == ["a", "b"]
    responses = await mesh.tools(format="responses")
    assert all(tool["type"] == "function" and tool["strict"] is False for tool in responses)
    cloudflare = await mesh.tools(format="cloudflare")
    assert all(set(tool) == {"name", "description", "parameters"} for tool in cloudflare)
    assert all("inputSchema" in tool for tool in await mesh.tools(format="mcp"))


async def test_namespaces(mesh: Driven) -> None:
    body = await mesh.namespaces()
    assert [namespace["name"] for namespace in body["namespaces"]] == ["counter"]
    assert body["system_message"]["role"] == "developer"


async def test_execute_tool_calls_takes_sdk_objects_lists_and_text(mesh: Driven) -> None:
    message = ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_add", type="function", function=Function(name="add", arguments='{"a": 1, "b": 2}')
            ),
            ChatCompletionMessageFunctionToolCall(
                id="call_nope", type="function", function=Function(name="nope", arguments="{}")
            ),
        ],
    )
    chat = await mesh.execute_tool_calls(message)
    assert chat["messages"][0] == {"role": "tool", "tool_call_id": "call_add", "content": "3"}
    assert chat["messages"][1]["tool_call_id"] == "call_nope"
    assert chat["messages"][1]["content"].startswith("Error: no function named 'nope'")
    items = [
        ResponseFunctionToolCall(
            type="function_call", call_id="fc_1", name="echo", arguments='{"text": "hi"}'
        )
    ]
    responses = await mesh.execute_tool_calls(items)
    assert responses == {"output": [{"type": "function_call_output", "call_id": "fc_1", "output": "hi"}]}
    cloudflare = await mesh.execute_tool_calls([{"name": "add", "arguments": {"a": 2}}])
    assert cloudflare["results"][0]["structured"] == 3
    hermes = await mesh.execute_tool_calls(
        '<tool_call>{"name": "echo", "arguments": {"text": "yo"}}</tool_call>'
    )
    assert hermes["results"][0]["content"] == "yo" and "<tool_response>" in hermes["text"]
    await raises(InvalidRequest, mesh.execute_tool_calls([]))


async def test_an_unreachable_gateway_is_unavailable(connect: Connect) -> None:
    unreachable = await raises(Unavailable, connect(f"http://127.0.0.1:{closed_port()}").list_functions())
    assert "cannot reach the gateway" in unreachable.message


async def test_a_malformed_url_is_an_invalid_request(connect: Connect) -> None:
    no_scheme = await raises(InvalidRequest, connect("localhost:8080").list_functions())
    assert no_scheme.param == "base_url" and "http://" in no_scheme.message
    with pytest.raises(InvalidRequest):
        Client("http://host:port:8080")
    with pytest.raises(InvalidRequest):
        AsyncClient("http://host:port:8080")


async def test_waiting_longer_than_the_client_timeout_is_a_function_timeout(
    connect: Connect, gateway: Gateway
) -> None:
    impatient = connect(gateway.url, timeout=0.2)
    await raises(FunctionTimeout, impatient.invoke("sync_sleep", {"seconds": 1}))


@contextlib.asynccontextmanager
async def foreign_server(status: str, body: bytes, content_type: str = "text/html") -> AsyncIterator[str]:
    """A real HTTP server that is not toolmesh (a proxy's error page, say); yields its URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        writer.write(head.encode() + b"connection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(
    ("status", "body", "content_type", "error"),
    [
        ("502 Bad Gateway", b"<html><h1>502 Bad Gateway</h1></html>", "text/html", Unavailable),
        ("500 Internal Server Error", b"oops", "text/plain", InternalError),
        ("200 OK", b"<html>hello</html>", "text/html", InternalError),
        ("200 OK", b'{"hello": "world"}', "application/json", InternalError),
    ],
)
async def test_answers_that_are_not_toolmesh_are_errors_of_the_hierarchy(
    connect: Connect, status: str, body: bytes, content_type: str, error: type[ToolmeshError]
) -> None:
    async with foreign_server(status, body, content_type) as url:
        raised = await raises(error, connect(url).list_functions())
    assert raised.message


# -- gRPC: GrpcClient -------------------------------------------------------------------------


async def test_grpc_client_lists_and_invokes_like_http(gateway: Gateway) -> None:
    async with GrpcClient(grpc_address(gateway)) as native, AsyncClient(gateway.url) as http:
        listed = await native.list_functions()
        assert {spec.runtime for spec in listed} == {"tools"}
        assert [dataclasses.replace(spec, runtime="") for spec in listed] == await http.list_functions()
        assert [spec.name for spec in await native.list_functions("counter")] == ["increment", "current"]
        calls: list[tuple[str, dict[str, Any]]] = [
            ("add", {"a": 2, "b": 40}),
            ("echo", {"text": "héllo"}),
            ("blob", {}),
            ("mixed", {}),
        ]
        calls += [("ticks", {"n": 2}), ("fail", {"message": "disk full"})]
        for name, arguments in calls:
            over_grpc, over_http = await native.invoke(name, arguments), await http.invoke(name, arguments)
            assert over_grpc.content == over_http.content, name
            assert over_grpc.structured_json == over_http.structured_json, name
            assert (over_grpc.is_error, over_grpc.error) == (over_http.is_error, over_http.error), name
        tagged = await native.invoke(
            "noop", request_id="req-9", session_id="s", metadata={"k": "v"}, timeout=5
        )
        assert tagged.request_id == "req-9"


async def test_grpc_client_streams_items_then_the_result(gateway: Gateway) -> None:
    async with GrpcClient(grpc_address(gateway)) as native:
        events = [event async for event in native.stream("count", {"n": 3})]
        assert events[:-1] == [Text("line 0"), Text("line 1"), Text("line 2")]
        final = events[-1]
        assert isinstance(final, Result) and not final.is_error and final.content == []
        ticks = [event async for event in native.stream("ticks", {"n": 2})]
        assert ticks[:-1] == [Json(b'{"tick":0}'), Json(b'{"tick":1}')]
        async with contextlib.aclosing(native.stream("ticks", {"n": 1000, "delay": 0.01})) as endless:
            first = await anext(endless)
        assert first == Json(b'{"tick":0}')
        assert (await native.invoke("add", {"a": 1})).structured == 2, "the channel works after an early exit"


async def test_grpc_client_raises_the_exact_error(gateway: Gateway, locked: Gateway) -> None:
    async with GrpcClient(grpc_address(gateway)) as native:
        not_found = await raises(FunctionNotFound, native.invoke("ad"))
        assert not_found.details["suggestions"] == ["add"]
        invalid = await raises(InvalidArguments, native.invoke("add", {"a": "x"}))
        assert [violation.path for violation in invalid.violations] == ["a"]
        await raises(FunctionTimeout, native.invoke("sleepy", {"seconds": 5}))
        await raises(FunctionTimeout, native.invoke("sync_sleep", {"seconds": 1}, timeout=0.2))
        with pytest.raises(FunctionNotFound):
            async for _ in native.stream("nope"):
                pass
    async with GrpcClient(grpc_address(locked)) as anonymous:
        await raises(Unauthenticated, anonymous.list_functions())
    async with GrpcClient(grpc_address(locked), api_key="secret") as narrow:
        assert [spec.name for spec in await narrow.list_functions()] == ["add"]
        await raises(FunctionNotFound, narrow.invoke("echo", {"text": "x"}))
        assert (await narrow.invoke("add", {"a": 1, "b": 2})).structured == 3
    async with GrpcClient(f"127.0.0.1:{closed_port()}") as unreachable:
        await raises(Unavailable, unreachable.invoke("add", {"a": 1}))
