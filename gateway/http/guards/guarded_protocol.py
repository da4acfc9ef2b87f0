"""uvicorn's httptools protocol with the limits of `ConnectionGuard`: a connection cap with eviction,
a header timeout, a body timeout and a bound on a request head's size.

The timers live on the protocol (one per connection, on the event loop): uvicorn has no hook
between accepting a connection and a complete request, which is exactly where slowloris lives.
The gateway pins uvicorn to httptools (`http="httptools"`), so this is the only protocol class.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from toolmesh.gateway.http.guards.connection_guard import ConnectionGuard
from toolmesh.gateway.http.guards.write_coalescing import CoalescingTransport

#: Largest request head (request line and headers) in bytes. httptools sets no limit of its own
#: (h11's default is 16 KiB); a longer head gets 431 and the connection closes.
MAX_HEAD_BYTES = 64 * 1024

_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedHttpProtocol]:
    """The protocol class to give uvicorn (`Config(http=...)`), bound to one server's `guard`."""
    return type("GuardedHttpProtocol", (GuardedHttpProtocol,), {"guard": guard})


class GuardedHttpProtocol(HttpToolsProtocol):
    """One HTTP connection. Use a class bound by `guarded_protocol`."""

    guard: ConnectionGuard

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        #: Bytes received since the connection began waiting for a request head; None once it has one.
        self._head_bytes: int | None = None
        self._last_body = 0.0

    # -- the connection -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # A response's head and body in one send (write_coalescing.py).
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
        if not self.guard.admit(self):
            transport.close()
            return
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.release(self)
        self._cancel_timers()
        super().connection_lost(exc)

    def evict(self) -> None:
        self._cancel_timers()
        self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None

    # -- the request head -----------------------------------------------------------------

    def _await_head(self) -> None:
        self._head_bytes = 0
        self.guard.awaiting_head(self)
        # Counted from now, never reset by a byte that arrives: that is what a trickler relies on.
        self._head_timer = self.loop.call_later(self.guard.header_timeout, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._head_bytes:  # an idle keep-alive connection sent nothing: just close it
            self.guard.note("head_timeout")
        self.guard.release(self)
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        # Checked after parsing, so that the read that completes a head (perhaps with some body)
        # always passes: only a head still unfinished past the limit is refused.
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES:
            self._head_bytes = None
            if not self.transport.is_closing():
                self.guard.note("head_too_large")
                self.transport.write(_431)
                self.transport.close()

    def on_headers_complete(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._head_bytes = None
        self.guard.head_received(self)
        super().on_headers_complete()
        self._last_body = self.loop.time()
        self._body_timer = self.loop.call_later(self.guard.body_timeout, self._body_timed_out)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # uvicorn arms its keep-alive timer only when it now waits for another request (no
        # pipelined one queued, connection still open): so does the header timeout.
        if self.timeout_keep_alive_task is not None and self._head_timer is None:
            self._await_head()

    # -- the request body -----------------------------------------------------------------

    def on_body(self, body: bytes) -> None:
        self._last_body = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused:
            # The app has not taken the body so far (or a pipelined request waits): the client
            # cannot send, so it is not late; its time starts again when reading resumes.
            self._last_body = now
        idle = now - self._last_body
        if idle < self.guard.body_timeout:
            self._body_timer = self.loop.call_later(self.guard.body_timeout - idle, self._body_timed_out)
            return
        self.guard.note("body_timeout")
        if self.cycle is not None and not self.cycle.response_started:
            self.transport.write(_408)
        self.transport.close()
