"""A client that leaves during a long tools/call has its call cancelled, on the fast path as on the
SDK's (gateway/mcp/answers/long_calls.py): the pod's function is cancelled, and an idempotency key
says the outcome is unknown, in both protocol eras, before and after the event stream began."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.server import _streamable_http_modern
from sse_starlette import EventSourceResponse

from tests.gateway.conftest import StartGateway, runtime

MODERN = "2026-07-28"
WINDOW = 0.6


def headers(era: str, name: str, key: str) -> dict[str, str]:
    sent = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": era,
    }
    if era == MODERN:
        sent |= {"mcp-method": "tools/call", "mcp-name": name}
    if key:
        sent["idempotency-key"] = key
    return sent


def body(era: str, name: str, arguments: dict[str, Any], by_sdk: bool) -> bytes:
    meta: dict[str, Any] = {}
    if era == MODERN:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    if by_sdk:  # which the SDK ignores and the fast path leaves to the SDK
        meta["org.example/inert"] = True
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}).encode()


async def leave_after(
    port: int, seconds: float, era: str, arguments: dict[str, Any], by_sdk: bool, key: str
) -> bytes:
    """POST a call of `hold` on a connection of its own, close it after `seconds`; what was read."""
    content = body(era, "hold", arguments, by_sdk)
    head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: {len(content)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers(era, "hold", key).items())
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode() + b"\r\n" + content)
    read = b""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while (left := end - loop.time()) > 0:
        try:
            chunk = await asyncio.wait_for(reader.read(4096), left)
        except TimeoutError:
            break
        if not chunk:
            break
        read += chunk
    writer.close()
    await writer.wait_closed()
    return read


def note(marker: Path) -> str:
    return marker.read_text() if marker.exists() else ""


async def marked(marker: Path) -> str:
    """What the call noted in `marker`, once it did."""
    for _ in range(100):
        if noted := note(marker):
            return noted
        await asyncio.sleep(0.1)
    return "still running"


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
@pytest.mark.parametrize("streamed", [False, True], ids=["within-the-window", "on-the-stream"])
async def test_a_client_that_leaves_cancels_its_call_as_on_the_sdks_path(
    gateway_factory: StartGateway, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, era: str, streamed: bool
) -> None:
    monkeypatch.setattr(_streamable_http_modern, "_SSE_PING_INTERVAL", WINDOW)
    monkeypatch.setattr(EventSourceResponse, "DEFAULT_PING_INTERVAL", WINDOW)
    gateway = await gateway_factory(runtime("tools", "long_tools"))
    port = int(gateway.url.rsplit(":", 1)[1])
    seen: dict[bool, tuple[str, str, bytes]] = {}
    for by_sdk in (False, True):
        marker = tmp_path / f"marker-{by_sdk}"
        arguments = {"seconds": 8, "marker": str(marker)}
        key = f"leave-{by_sdk}"
        read = await leave_after(port, 1.0 if streamed else 0.3, era, arguments, by_sdk, key)
        outcome = await marked(marker)
        # The same call again with the same key: its outcome cannot be known.
        async with httpx2.AsyncClient(timeout=30) as http:
            again = await http.post(
                f"{gateway.url}/mcp",
                content=body(era, "hold", arguments, by_sdk),
                headers=headers(era, "hold", key),
            )
        seen[by_sdk] = (outcome, again.text, read.split(b"\r\n", 1)[0])
    assert seen[False][0] == seen[True][0] == "cancelled"
    fast, sdk = seen[False][1], seen[True][1]
    assert "cancelled" in fast and fast.replace("leave-False", "") == sdk.replace("leave-True", ""), (
        fast,
        sdk,
    )
    # What the client had read before leaving: the head of the stream, or (2026-07-28, within its
    # window) nothing, on either path.
    assert seen[False][2] == seen[True][2] == (b"" if era == MODERN and not streamed else b"HTTP/1.1 200 OK")
