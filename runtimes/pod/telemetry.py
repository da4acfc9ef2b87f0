"""Prometheus metrics of a runtime pod, served on their own HTTP port (or Unix socket).

    toolmesh_runtime_invocations_total{function,outcome}            counter
    toolmesh_runtime_invocation_duration_seconds{function,outcome}  histogram (arrival to result)
    toolmesh_runtime_inflight_requests                              gauge
    toolmesh_runtime_functions                                      gauge (functions hosted)
    toolmesh_runtime_loop_blocks_total{function}                    counter (stalls of the event loop)
    toolmesh_runtime_loop_blocked_seconds{function,request_id}      gauge (the last RECENT_STALLS)

`function` is always a hosted function's qualified name, or "" for calls to
unknown names, so clients cannot inflate the label set. `outcome` is one of
ok, error, invalid_arguments, timeout, cancelled, rejected, not_found. The loop series
(isolation/loop_watchdog.py) name the call whose async code blocked the event loop past the
runtime's `loop_blocked_after` ("" for code outside any call); `request_id` is kept for the
last `RECENT_STALLS` stalls only, so the label set stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

from toolmesh.metrics.call_metrics import CallMetrics
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.pod.isolation.pod_auth import bearer_matches

#: Stalls whose request id stays in toolmesh_runtime_loop_blocked_seconds.
RECENT_STALLS = 16


class PodMetrics:
    """Executor observer that records every finished call."""

    def __init__(self, registry: CollectorRegistry, inflight: Callable[[], float], functions: int) -> None:
        self.registry = registry
        self._calls = CallMetrics(registry, "toolmesh_runtime", "this pod")
        Gauge("toolmesh_runtime_inflight_requests", "Calls running now.", registry=registry).set_function(
            inflight
        )
        Gauge("toolmesh_runtime_functions", "Functions this pod hosts.", registry=registry).set(functions)

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        self._calls.observe(function, outcome, seconds)


class LoopMetrics:
    """The event loop's stalls, recorded from the watchdog's thread (prometheus_client's
    own series are thread-safe)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._blocks = Counter(
            "toolmesh_runtime_loop_blocks_total",
            "Times a call's async code blocked the event loop past loop_blocked_after, by function.",
            ["function"],
            registry=registry,
        )
        self._seconds = Gauge(
            "toolmesh_runtime_loop_blocked_seconds",
            "How long the event loop was blocked, for the last stalls, by function and request id.",
            ["function", "request_id"],
            registry=registry,
        )
        self._recent: deque[tuple[str, str]] = deque()
        self._lock = threading.Lock()

    def blocked(self, function: str, request_id: str, seconds: float, *, first: bool) -> None:
        with self._lock:
            if first:
                self._blocks.labels(function).inc()
                self._recent.append((function, request_id))
                while len(self._recent) > RECENT_STALLS:
                    with contextlib.suppress(KeyError):
                        self._seconds.remove(*self._recent.popleft())
            self._seconds.labels(function, request_id).set(seconds)


def _authorization(head: bytes) -> bytes | None:
    """The Authorization header's value in an HTTP request head, if any."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"authorization":
            return value.strip()
    return None


async def serve_metrics(
    registry: CollectorRegistry, host: str, port: int, *, path: str | None = None, token: str = ""
) -> asyncio.Server:
    """Serve ``GET /metrics`` on the pod's event loop: on host:port, or on the Unix socket
    `path`. With a `token`, only to requests with ``Authorization: Bearer <token>``.

    A few lines of asyncio instead of prometheus_client's threaded server,
    whose shutdown waits out a 0.5 s poll and would slow every drain.
    """

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
            method, _, rest = head.partition(b" ")
            target = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if token and not bearer_matches(_authorization(head), token):
                status, body, kind = "401 Unauthorized", b"send Authorization: Bearer <token>\n", "text/plain"
            elif method == b"GET" and target == b"/metrics":
                status, body, kind = "200 OK", generate_latest(registry), CONTENT_TYPE_LATEST
            else:
                status, body, kind = "404 Not Found", b"try /metrics\n", "text/plain"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        writer.close()

    if path is not None:
        return await asyncio.start_unix_server(handle, path)
    return await asyncio.start_server(handle, host, port)
