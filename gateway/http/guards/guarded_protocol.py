"""uvicorn's httptools protocol with the limits of `ConnectionGuard`: a connection cap with eviction,
a header timeout, a body timeout and a bound on a request head's size.

The timer lives on the protocol (one per connection, on the event loop): uvicorn has no hook
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

#: What a connection waits for (`GuardedHttpProtocol._waiting`).
_NOTHING, _HEAD, _BODY = 0, 1, 2

_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedHttpProtocol]:
    """The protocol class to give uvicorn (`Config(http=...)`), bound to one server's `guard`."""
    return type("GuardedHttpProtocol", (GuardedHttpProtocol,), {"guard": guard})


class GuardedHttpProtocol(HttpToolsProtocol):
    """One HTTP connection. Use a class bound by `guarded_protocol`.

    A connection waits for a request's head (`header_timeout` from when it began waiting), then
    for its body (`body_timeout` of silence), then for nothing while the app answers. One timer
    per connection checks the deadline of whatever it waits for: a request only moves the
    deadline (a float), it does not arm and cancel timers of its own. The timer fires at most
    every `min(header_timeout, body_timeout, timeout_keep_alive)` seconds and finds the deadline
    late or re-arms. uvicorn's keep-alive timeout (an idle connection closed after
    `timeout_keep_alive` seconds with no byte after a response) is one more deadline of that timer,
    instead of a timer that uvicorn arms after every response and cancels at the next read.
    """

    guard: ConnectionGuard

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._timer: asyncio.TimerHandle | None = None
        #: What the connection waits for: _HEAD, _BODY or _NOTHING (the app has the request).
        self._waiting = _NOTHING
        self._head_deadline = 0.0
        #: Bytes received since the connection began waiting for a request head; None once it has one.
        self._head_bytes: int | None = None
        self._last_body = 0.0
        #: When an idle keep-alive connection is closed; None while bytes have come since the
        #: last response (or none was sent yet).
        self._keep_alive_deadline: float | None = None
        # Any deadline set later lies at least this far ahead, so a timer armed this far ahead
        # is never late for one.
        self._tick = min(self.guard.header_timeout, self.guard.body_timeout, self.timeout_keep_alive)

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
        self._waiting = _NOTHING
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _wait_for(self, what: int, now: float) -> None:
        self._waiting = what
        if self._timer is None:
            self._timer = self.loop.call_at(now + self._tick, self._check)

    def _check(self) -> None:
        """The connection's timer: the deadline of what it waits for, met, missed or ahead."""
        self._timer = None
        if self._waiting == _NOTHING or self.transport.is_closing():
            return
        now = self.loop.time()
        if self._waiting == _HEAD:
            deadline = self._head_deadline
            if now >= deadline:
                self._head_timed_out()
                return
            if self._keep_alive_deadline is not None:
                if now >= self._keep_alive_deadline:
                    self.timeout_keep_alive_handler()
                    return
                deadline = min(deadline, self._keep_alive_deadline)
        else:
            if self.flow.read_paused:
                # The app has not taken the body so far (or a pipelined request waits): the
                # client cannot send, so it is not late; its time starts again when reading resumes.
                self._last_body = now
            deadline = self._last_body + self.guard.body_timeout
            if now >= deadline:
                self._body_timed_out()
                return
        self._timer = self.loop.call_at(min(deadline, now + self._tick), self._check)

    # -- the request head -----------------------------------------------------------------

    def _await_head(self) -> None:
        self._head_bytes = 0
        self.guard.awaiting_head(self)
        # Counted from now, never reset by a byte that arrives: that is what a trickler relies on.
        now = self.loop.time()
        self._head_deadline = now + self.guard.header_timeout
        self._wait_for(_HEAD, now)

    def _head_timed_out(self) -> None:
        self._waiting = _NOTHING
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
        self._head_bytes = None
        self.guard.head_received(self)
        super().on_headers_complete()
        now = self._last_body = self.loop.time()
        self._wait_for(_BODY, now)

    def _unset_keepalive_if_required(self) -> None:
        # uvicorn's hook, at every read and at the end: a byte came, the connection is not idle.
        self._keep_alive_deadline = None

    def on_response_complete(self) -> None:
        # uvicorn's, with its keep-alive timer as a deadline of the connection's timer.
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._keep_alive_deadline = None
        self.flow.resume_reading()
        if self.pipeline:  # a pipelined request waits: start it
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            # Waiting for another request: the header timeout and the keep-alive one run.
            if self._waiting != _HEAD:
                self._await_head()
            self._keep_alive_deadline = self.loop.time() + self.timeout_keep_alive

    # -- the request body -----------------------------------------------------------------

    def on_body(self, body: bytes) -> None:
        self._last_body = self.loop.time()
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._waiting == _BODY:
            self._waiting = _NOTHING
        super().on_message_complete()

    def _body_timed_out(self) -> None:
        self._waiting = _NOTHING
        self.guard.note("body_timeout")
        if self.cycle is not None and not self.cycle.response_started:
            self.transport.write(_408)
        self.transport.close()
