"""tools/call answered on the fast path (gateway/mcp/direct_calls.py) is, byte for byte, what the
SDK answers; a request the fast path does not take reaches the SDK whole.

The SDK's answer to the same call is got by adding an inert `_meta` key, which the SDK ignores and
the fast path leaves to the SDK. Which requests reach the SDK is counted at its session manager."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from tests.gateway.conftest import StartGateway, runtime

ERAS = ["2025-11-25", "2026-07-28"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"text": 'héllo ✓ "quoted" \\ </script>'}),
    ("add", {"a": 2, "b": 3}),
    ("add", {"a": "not a number"}),
    ("noop", {}),
    ("fail", {"message": "it broke, ünïcode"}),
    ("mixed", {}),
    ("blob", {}),
]


@pytest.fixture
def reached_sdk(monkeypatch: pytest.MonkeyPatch) -> list[bytearray]:
    """The bodies of the requests that reach the SDK's session manager."""
    seen: list[bytearray] = []
    original = StreamableHTTPSessionManager.handle_request

    async def counted(self: StreamableHTTPSessionManager, scope: Any, receive: Any, send: Any) -> None:
        body = bytearray()
        seen.append(body)  # at once: the answer may be out before the SDK returns

        async def recorded() -> Any:
            message = await receive()
            body.extend(message.get("body", b""))
            return message

        await original(self, scope, recorded, send)

    monkeypatch.setattr(StreamableHTTPSessionManager, "handle_request", counted)
    return seen


async def call(
    url: str, era: str, request_id: int, name: str, arguments: dict[str, Any], inert: bool
) -> httpx2.Response:
    meta: dict[str, Any] = {}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": era,
    }
    if era != "2025-11-25":
        meta = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"mcp-method": "tools/call", "mcp-name": name}
    if inert:
        meta["org.example/inert"] = True
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, content=json.dumps(body).encode(), headers=headers)


def wire(response: httpx2.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = [(k, v) for k, v in response.headers.items() if k not in ("date", "x-request-id")]
    return response.status_code, headers, response.content


@pytest.mark.parametrize("era", ERAS)
async def test_a_direct_answer_is_the_sdks_byte_for_byte(
    gateway_factory: StartGateway, reached_sdk: list[bytearray], era: str
) -> None:
    gateway = await gateway_factory(runtime())
    url = f"{gateway.url}/mcp"
    for number, (name, arguments) in enumerate(CALLS):
        for _ in range(2):  # the second time round too: nothing is kept between calls
            reached_sdk.clear()
            direct = await call(url, era, number, name, arguments, inert=False)
            assert reached_sdk == [], name
            by_sdk = await call(url, era, number, name, arguments, inert=True)
            assert len(reached_sdk) == 1, name
            assert wire(direct) == wire(by_sdk), name
    reply = await call(url, era, 1, "echo", {"text": "hi"}, inert=False)
    data = reply.text if era == "2026-07-28" else reply.text.split("data: ", 1)[1]
    assert json.loads(data)["result"]["content"] == [{"type": "text", "text": "hi"}]


@pytest.mark.parametrize("era", ERAS)
async def test_what_the_fast_path_does_not_take_reaches_the_sdk_whole(
    gateway_factory: StartGateway, reached_sdk: list[bytearray], era: str
) -> None:
    gateway = await gateway_factory(runtime())
    url = f"{gateway.url}/mcp"
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": era,
    }
    bodies = [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"org.example/x":1}}}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[]}}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},'
        b'"_meta":{"progressToken":7}}}',
        b'[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}]',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call"',
        b"",
    ]
    for body in bodies:
        reached_sdk.clear()
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(url, content=body, headers=headers)
        assert response.status_code < 500, (body, response.text)
        assert reached_sdk == [body]
