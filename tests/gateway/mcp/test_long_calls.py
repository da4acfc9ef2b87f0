"""A tools/call that outlives the SDK transport's window is answered on an event stream, pinged,
with the response as its last event, on the fast path as by the SDK (gateway/mcp/answers/long_calls.py);
a 2026-07-28 call within the window gets one JSON body; a 2025-11-25 stream's head goes out while
the call runs; a call handed to the SDK after the stream began (a gateway error, an ask) ends on
that stream."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import _streamable_http_modern
from mcp_types import ErrorData, JSONRPCError, JSONRPCResponse
from sse_starlette import EventSourceResponse
from starlette.types import Message

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.gateway.mcp import direct_calls
from toolmesh.gateway.mcp.answers.long_calls import continued

ERA = "2026-07-28"
WINDOW = 0.15


async def call(
    url: str, name: str, arguments: dict[str, Any], inert: bool, era: str = ERA
) -> httpx2.Response:
    meta: dict[str, Any] = {}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": era,
    }
    if era == ERA:
        meta = {
            "io.modelcontextprotocol/protocolVersion": ERA,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"mcp-method": "tools/call", "mcp-name": name}
    if inert:  # which the SDK ignores and the fast path leaves to the SDK
        meta["org.example/inert"] = True
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, content=json.dumps(body).encode(), headers=headers)


def frames(response: httpx2.Response) -> tuple[int, list[tuple[str, str]], int, bytes]:
    """Status, headers, how many pings, and the last frame."""
    headers = [(k, v) for k, v in response.headers.items() if k not in ("date", "x-request-id")]
    *pings, last = response.content.split(b"\r\n\r\n")[:-1]
    assert all(ping == b": ping" or ping.startswith(b": ping - 20") for ping in pings), pings
    return response.status_code, headers, len(pings), last


def shorten_window(monkeypatch: pytest.MonkeyPatch, *, spy: bool = False) -> list[bool]:
    """Both SDK transports' ping interval (the fast path's window) cut to WINDOW; with `spy`, the
    returned list gets an item each time a call is handed to the SDK after its stream began."""
    monkeypatch.setattr(_streamable_http_modern, "_SSE_PING_INTERVAL", WINDOW)
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", WINDOW)
    handed: list[bool] = []
    if spy:
        monkeypatch.setattr(direct_calls, "continued", lambda send: handed.append(True) or continued(send))  # type: ignore[func-returns-value]
    return handed


@pytest.mark.parametrize("era", ["2025-11-25", ERA])
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("block", {"seconds": 0.6}),  # answered by the fast path, after the window
        ("sleepy", {"seconds": 5}),  # its own timeout (0.3 s) after the window: an error result
    ],
)
async def test_a_call_past_the_window_streams_as_the_sdks(
    gateway_factory: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    arguments: dict[str, Any],
    era: str,
) -> None:
    shorten_window(monkeypatch)
    gateway = await gateway_factory(runtime())
    url = f"{gateway.url}/mcp"
    direct = frames(await call(url, name, arguments, inert=False, era=era))
    by_sdk = frames(await call(url, name, arguments, inert=True, era=era))
    assert direct[0] == by_sdk[0] == 200
    assert direct[1] == by_sdk[1] and ("content-type", "text/event-stream") in direct[1]
    assert direct[2] >= 1 and by_sdk[2] >= 1
    assert direct[3] == by_sdk[3] and direct[3].startswith(b"event: message\r\ndata: {")


async def test_a_call_within_the_window_is_one_json_body(
    gateway_factory: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_streamable_http_modern, "_SSE_PING_INTERVAL", 5.0)
    gateway = await gateway_factory(runtime())
    reply = await call(f"{gateway.url}/mcp", "block", {"seconds": 0.3}, inert=False)
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["result"]["content"] == [{"type": "text", "text": "released"}]


@pytest.mark.parametrize("ok", [True, False])
async def test_an_answer_handed_over_after_the_stream_began_is_its_last_event(ok: bool) -> None:
    # The SDK answers a call it adopts within its own window: JSON (`_write`), which the stream
    # the fast path began carries as the frame the SDK's event-stream mode would have sent.
    message: JSONRPCResponse | JSONRPCError = (
        JSONRPCResponse(jsonrpc="2.0", id=3, result={"content": [], "isError": False})
        if ok
        else JSONRPCError(jsonrpc="2.0", id=3, error=ErrorData(code=-32602, message="no function 'x' ✓"))
    )
    sent: list[Message] = []

    async def send(sent_message: Message) -> None:
        sent.append(sent_message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
    await _streamable_http_modern._write(message, scope, receive, continued(send))
    assert sent == [{"type": "http.response.body", "body": _streamable_http_modern._sse_event(message)}]


async def test_a_2025_stream_s_head_goes_out_while_the_call_runs_as_the_sdks(
    gateway_factory: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sse-starlette sends the head at once; the fast path after NOTICE (0.1 s): a client waiting
    # for the head with a short timeout (Go's ResponseHeaderTimeout, say) hears from both.
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", 30.0)  # no ping: only the head
    gateway = await gateway_factory(runtime())
    seen = []
    for inert in (False, True):
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "block", "arguments": {"seconds": 2}},
            }
            | (
                {
                    "params": {
                        "name": "block",
                        "arguments": {"seconds": 2},
                        "_meta": {"org.example/inert": True},
                    }
                }
                if inert
                else {}
            )
        )
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": "2025-11-25",
        }
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=5)) as http:
            loop = asyncio.get_running_loop()
            begun = loop.time()
            async with http.stream("POST", f"{gateway.url}/mcp", content=body, headers=headers) as reply:
                head_after = loop.time() - begun
                content = await reply.aread()
        seen.append((head_after, reply.headers["content-type"], content))
    (fast_head, fast_type, fast), (sdk_head, sdk_type, sdk) = seen
    assert fast_head < 1.0 and sdk_head < 1.0, (fast_head, sdk_head)  # the call takes 2 s
    assert fast_type == sdk_type == "text/event-stream"
    assert fast == sdk and fast.startswith(b"event: message\r\ndata: {")


@pytest.mark.parametrize("era", ["2025-11-25", ERA])
async def test_a_gateway_error_after_the_stream_began_is_its_last_event_as_the_sdks(
    gateway_factory: StartGateway, monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    # The pod ends mid-call after the window: `Mesh.invoke` raises, the SDK's `_call_tool` answers
    # the error, on the stream the fast path began (answers/long_calls.py `continued`).
    handed = shorten_window(monkeypatch, spy=True)
    gateway = await gateway_factory(runtime("tools", "long_tools"))
    url = f"{gateway.url}/mcp"
    direct = frames(await call(url, "die_later", {"seconds": 0.5}, inert=False, era=era))
    assert handed, "handed to the SDK after the stream began"
    by_sdk = frames(await call(url, "die_later", {"seconds": 0.5}, inert=True, era=era))
    assert direct[0] == by_sdk[0] == 200
    assert direct[1] == by_sdk[1] and ("content-type", "text/event-stream") in direct[1]
    assert direct[2] >= 1 and by_sdk[2] >= 1
    last, sdk_last = (re.sub(rb"pod \d+ ", b"pod N ", frame[3]) for frame in (direct, by_sdk))
    assert last == sdk_last and b"died mid-call" in last and b'"isError":true' in last, last


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_that_asks_after_the_stream_began_is_answered(
    gateway_factory: StartGateway, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # The official client: 2026-07-28 ("auto") gets an input-required result as the stream's last
    # event and calls again; 2025 ("legacy") gets the ask on the stream the fast path began.
    handed = shorten_window(monkeypatch, spy=True)
    gateway = await gateway_factory(runtime("tools", "long_tools"))
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"city": "Oslo"})

    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(
            streamable_http_client(f"{gateway.url}/mcp", http_client=http),
            mode=mode,
            elicitation_callback=elicit,
        ) as client,
    ):
        result = await client.call_tool("plan_later", {"seconds": 0.5})
    assert handed, "handed to the SDK after the stream began"
    assert not result.is_error and isinstance(result.content[0], types.TextContent), result
    assert result.content[0].text == "to Oslo"
    assert asked[0] == "Where to?"
