"""A tools/call on the fast path that runs long: kept alive on an event stream, as the SDK does,
and cancelled when its client leaves, as the SDK cancels its handler.

The SDK's 2026-07-28 transport (`mcp.server._streamable_http_modern`, SSE mode, which the endpoint
runs) holds its answer back for a window (`_SSE_PING_INTERVAL`, 15 s): a call done within it is
answered with one JSON body; one still running when it ends commits `text/event-stream`, is sent
a ``: ping`` comment then and every interval after (so a proxy's idle-read timeout does not cut
it), and its response goes last, as one `event: message` frame. Its 2025-11-25 transport answers on
an event stream whose head sse-starlette sends at once, pinging every 15 s (``: ping - <UTC
time>``). Both cancel the call when the client disconnects (the 2026 transport watches for
`http.disconnect`; the 2025 one ends the stateless request's server when sse-starlette sees it).

`Keepalive` does the same for the fast path (direct_calls.py), which sends its answer's start
with its answer, at the cost of one timer per call: a call still running after `NOTICE` (0.1 s)
gets a task that watches for its client leaving and cancels the call's task then (the pod gets
its CANCEL, jobs and idempotency records settle as for any cancelled call); on 2025-11-25 the
stream's head goes out then too, so a client waiting for the head with a short timeout (Go's
`ResponseHeaderTimeout`, a fetch's) hears from the gateway as from the SDK, within 0.1 s instead
of at once. A call done within `NOTICE` has cost no task, and a client that leaves during it is
noticed only at its answer. The window is counted from the call's start, the SDK's from its
dispatch, a millisecond earlier or later.

A call handed to the SDK after the stream was committed keeps it: `continued` gives the SDK a
`send` that drops its own response start and frames a JSON answer as the stream's last event.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

from mcp.server import _streamable_http_modern as _modern
from sse_starlette import EventSourceResponse
from starlette.types import Message, Receive, Send

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


#: How long a call runs before it is watched for its client leaving and, on 2025-11-25, its event
#: stream's head goes out (see the module's docstring).
NOTICE = 0.1


class Keepalive:
    """The event stream of one call that outlives the window, and its client's leaving (see the
    module's docstring)."""

    def __init__(self, send: Send, receive: Receive, modern: bool) -> None:
        self._send = send
        self._receive = receive
        self._modern = modern
        self._interval = window(modern)
        loop = asyncio.get_running_loop()
        #: The call's task, cancelled when its client leaves.
        self._task = asyncio.current_task(loop)
        self._start = loop.time()
        self._notice = loop.call_later(min(NOTICE, self._interval), self._noticed)
        self._commit: asyncio.TimerHandle | None = None
        self._pings: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._halted = False
        #: Whether the stream's head is out (the answer must then be its last event).
        self.committed = False
        #: Whether the client left (and the call's task was cancelled for it).
        self.left = False

    def _noticed(self) -> None:
        loop = asyncio.get_running_loop()
        self._watch = loop.create_task(self._watch_client())
        if self._halted:
            return
        if self._modern:  # the SDK holds its answer back for the window
            self._commit = loop.call_at(self._start + self._interval, self._stream)
        else:  # sse-starlette sends the head at once
            self._stream()

    def _stream(self) -> None:
        self._pings = asyncio.get_running_loop().create_task(self._ping())

    async def _ping(self) -> None:
        headers = SSE_HEADERS if self._modern else HANDSHAKE_SSE_HEADERS
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        self.committed = True
        # The first ping at the window from the call's start, then one every interval.
        delay = self._start + self._interval - asyncio.get_running_loop().time()
        while True:
            if delay > 0:
                await asyncio.sleep(delay)
            ping = _ping(self._modern)
            await self._send({"type": "http.response.body", "body": ping, "more_body": True})
            delay = self._interval

    async def _watch_client(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.left = True
        if self._task is not None:
            self._task.cancel()  # as the SDK cancels its handler: the pod gets its CANCEL

    def done(self) -> None:
        """The call has ended: stop watching its client (before anything else is awaited)."""
        self._notice.cancel()
        if self._watch is not None:
            self._watch.cancel()

    def halt(self) -> bool:
        """Stop streaming (the task ends at its next step); whether the stream's head is out."""
        self._halted = True
        if self._commit is not None:
            self._commit.cancel()
        if self._pings is not None:
            self._pings.cancel()
        return self.committed

    async def stop(self) -> bool:
        """Stop streaming; whether the stream's head is out (the answer must then be an event)."""
        self.halt()
        if self._pings is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._pings
        return self.committed


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
