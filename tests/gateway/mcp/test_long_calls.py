"""A tools/call that outlives the SDK transport's window is answered on an event stream, pinged,
with the response as its last event, on the fast path as by the SDK (gateway/mcp/answers/long_calls.py);
a 2026-07-28 call within the window gets one JSON body."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp.server import _streamable_http_modern
from mcp_types import ErrorData, JSONRPCError, JSONRPCResponse
from sse_starlette import EventSourceResponse
from starlette.types import Message

from tests.gateway.conftest import StartGateway, runtime
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
    monkeypatch.setattr(_streamable_http_modern, "_SSE_PING_INTERVAL", WINDOW)
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", WINDOW)
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
