"""What one HTTP server allows its connections: how many at once, and how long a client may take
to send a request's head and its body.

uvicorn closes an idle keep-alive connection, but any byte resets that timer and nothing bounds
the time to a complete request head: a client trickling a header byte every few seconds
(slowloris) holds its connection, and a file descriptor, for as long as it likes, and enough of
them exhaust the process's file limit so that every new client fails. uvicorn's own
`limit_concurrency` would not help: it answers 503 to the next *request*, and counts the
tricklers among the connections, so at the limit it refuses the legitimate clients instead.

So the guard counts connections against a cap below the file limit, and when the cap is reached a
new connection evicts the oldest one still waiting for its request's head (idle keep-alive ones
included, which HTTP lets a server close at any time): the slowloris connections go first, the
requests being served are never touched. Each eviction, refusal and timeout is counted and
reported in one WARNING at most every `WARNING_INTERVAL` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections import Counter
from typing import Protocol

log = logging.getLogger("toolmesh.gateway")

#: File descriptors the derived cap leaves for everything but HTTP clients: the pods' sockets and
#: pipes, gRPC clients, the router's model, logs (at most half the file limit).
FD_RESERVE = 512
#: Seconds between two warnings about connections held without a finished request.
WARNING_INTERVAL = 10.0

#: What each counted event is called in the warning.
_EVENTS = {
    "evicted": "evicted at the cap to make room",
    "refused": "refused at the cap (every open connection had sent a request)",
    "head_timeout": "closed without a complete request head after header_timeout",
    "body_timeout": "closed with no request body bytes for body_timeout",
    "head_too_large": "refused with a request head over the size limit",
}


def connection_cap(configured: int | None) -> int:
    """`configured`, or the soft file limit less `FD_RESERVE` (at most half of it)."""
    if configured is not None:
        return configured
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(1, soft - min(FD_RESERVE, soft // 2))


class Evictable(Protocol):
    """A connection the guard may close to make room for a new one."""

    def evict(self) -> None: ...


class ConnectionGuard:
    """Connection count, the queue of connections waiting for a request head, and the warnings.

    One per server, shared by its connections; everything runs on the server's event loop."""

    def __init__(self, cap: int, header_timeout: float, body_timeout: float) -> None:
        self.cap = cap
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self._open: set[Evictable] = set()
        # Insertion-ordered: the first key has waited longest for its head.
        self._waiting: dict[Evictable, None] = {}
        self._counts: Counter[str] = Counter()
        self._last_warning: float | None = None
        self._flush: asyncio.TimerHandle | None = None

    @property
    def open(self) -> int:
        return len(self._open)

    def admit(self, connection: Evictable) -> bool:
        """Count a new connection in, evicting the oldest one waiting for a head if at the cap;
        False when there is none to evict and the new one must be closed."""
        if len(self._open) >= self.cap:
            if not self._waiting:
                self.note("refused")
                return False
            oldest = next(iter(self._waiting))
            self.release(oldest)
            oldest.evict()
            self.note("evicted")
        self._open.add(connection)
        return True

    def release(self, connection: Evictable) -> None:
        """The connection is gone (or going): it no longer counts."""
        self._open.discard(connection)
        self._waiting.pop(connection, None)

    def awaiting_head(self, connection: Evictable) -> None:
        """The connection waits for a request head: it is now the newest that may be evicted."""
        self._waiting.pop(connection, None)
        if connection in self._open:
            self._waiting[connection] = None

    def head_received(self, connection: Evictable) -> None:
        self._waiting.pop(connection, None)

    def note(self, event: str) -> None:
        """Count one `event` (a key of `_EVENTS`) and warn, unless a warning went out lately."""
        self._counts[event] += 1
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._last_warning is None or now - self._last_warning >= WARNING_INTERVAL:
            self._warn()
        elif self._flush is None:
            # Report the events of a burst that ends before the next one would.
            self._flush = loop.call_at(self._last_warning + WARNING_INTERVAL, self._warn)

    def _warn(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if not self._counts:
            return
        loop = asyncio.get_running_loop()
        since = "" if self._last_warning is None else f" in the last {loop.time() - self._last_warning:.0f} s"
        what = "; ".join(f"{self._counts[e]} {text}" for e, text in _EVENTS.items() if self._counts[e])
        log.warning(
            f"HTTP clients holding connections without finishing a request{since}: {what} "
            f"({self.open} of at most {self.cap} connections open). Slow or hostile clients "
            "(slowloris); if they are real ones, raise [gateway] max_connections and the file "
            "limit (ulimit -n), or header_timeout and body_timeout.",
            extra={"open": self.open, "cap": self.cap, **self._counts},
        )
        self._counts.clear()
        self._last_warning = loop.time()
