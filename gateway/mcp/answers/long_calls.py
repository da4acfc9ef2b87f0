"""A tools/call on the fast path that runs long: kept alive on an event stream, as the SDK does.

The SDK's 2026-07-28 transport (`mcp.server._streamable_http_modern`, SSE mode, which the endpoint
runs) holds its answer back for a window (`_SSE_PING_INTERVAL`, 15 s): a call done within it is
answered with one JSON body; one still running when it ends commits `text/event-stream`, is sent
a ``: ping`` comment then and every interval after (so a proxy's idle-read timeout does not cut
it), and its response goes last, as one `event: message` frame. Its 2025-11-25 transport answers on
an event stream from the start (sse-starlette's), pinging every 15 s (``: ping - <UTC time>``).
`Keepalive` does the same for the fast path (direct_calls.py), which sends its answer's start
with its answer: a timer per call, and a task only for a call that outlives the window.

A call handed to the SDK after the stream was committed keeps it: `continued` gives the SDK a
`send` that drops its own response start and frames a JSON answer as the stream's last event.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

from mcp.server import _streamable_http_modern as _modern
from sse_starlette import EventSourceResponse
from starlette.types import Message, Send

#: The SDK's 2026-07-28 transport's event-stream answer (its `_SSE_HEADERS`, in its order).
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]
#: The SDK's 2025-11-25 transport's event stream (sse-starlette's, with the transport's headers).
HANDSHAKE_SSE_HEADERS = [
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
    (b"x-accel-buffering", b"no"),
]
PING = b": ping\r\n\r\n"


def window(modern: bool) -> float:
    """The SDK's deferral window and ping interval, in seconds."""
    if not modern:
        return float(EventSourceResponse.DEFAULT_PING_INTERVAL)
    interval = getattr(_modern, "_SSE_PING_INTERVAL", 15.0)
    return float(interval) if isinstance(interval, int | float) else 15.0


def _ping(modern: bool) -> bytes:
    # sse-starlette's comment for 2025-11-25: the time it is sent.
    return PING if modern else f": ping - {datetime.now(UTC)}\r\n\r\n".encode()


def event(data: bytes) -> bytes:
    """One JSON-RPC message as the SDK frames it on the stream."""
    return b"event: message\r\ndata: " + data + b"\r\n\r\n"


class Keepalive:
    """Commits the event stream of one call when it outlives the window (see the module's docstring)."""

    def __init__(self, send: Send, modern: bool) -> None:
        self._send = send
        self._modern = modern
        self._interval = window(modern)
        self._timer = asyncio.get_running_loop().call_later(self._interval, self._commit)
        self._pings: asyncio.Task[None] | None = None

    def _commit(self) -> None:
        self._pings = asyncio.get_running_loop().create_task(self._ping())

    async def _ping(self) -> None:
        headers = SSE_HEADERS if self._modern else HANDSHAKE_SSE_HEADERS
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        while True:
            ping = _ping(self._modern)
            await self._send({"type": "http.response.body", "body": ping, "more_body": True})
            await asyncio.sleep(self._interval)

    def halt(self) -> bool:
        """Stop pinging (the task ends at its next step); whether the stream was committed."""
        self._timer.cancel()
        if self._pings is None:
            return False
        self._pings.cancel()
        return True

    async def stop(self) -> bool:
        """Stop pinging; whether the stream was committed (the answer must then be an event)."""
        if not self.halt():
            return False
        assert self._pings is not None
        with contextlib.suppress(asyncio.CancelledError):
            await self._pings
        return True


def continued(send: Send) -> Send:
    """`send` for the SDK taking over a call whose event stream is already committed."""
    json_answer = False

    async def sender(message: Message) -> None:
        nonlocal json_answer
        if message["type"] == "http.response.start":
            json_answer = dict(message.get("headers", [])).get(b"content-type") == b"application/json"
            return  # the stream's start is out already
        if message["type"] == "http.response.body" and json_answer:
            body = message.get("body", b"")
            if body or not message.get("more_body", False):
                await send({"type": "http.response.body", "body": event(body) if body else b""})
            return
        await send(message)

    return sender
