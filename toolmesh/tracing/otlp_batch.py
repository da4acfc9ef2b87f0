"""toolmesh's own spans, batched and sent to the OTLP/HTTP endpoint from one thread.

Each finished span is queued (a deque append; the call's path does nothing else), and the
export thread writes a batch straight into OTLP's protobuf bytes (`otlp_wire`) and POSTs it.
The SDK's span objects and its Python encoder cost many times as much per span, which a no-op
call paid twice (gateway and pod).

The settings are the standard ones, read once at start-up, as the SDK's exporter reads them:
OTEL_EXPORTER_OTLP[_TRACES]_{ENDPOINT,HEADERS,TIMEOUT,COMPRESSION,CERTIFICATE} and
OTEL_BSP_{SCHEDULE_DELAY,MAX_QUEUE_SIZE,MAX_EXPORT_BATCH_SIZE}.
"""

from __future__ import annotations

import collections
import gzip
import http.client
import logging
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmesh.tracing.otlp_wire import Encoder, span_bytes

log = logging.getLogger("toolmesh.tracing")

DEFAULT_ENDPOINT = "http://localhost:4318"
TRACES_PATH = "v1/traces"
#: Seconds, as the Python SDK reads OTEL_EXPORTER_OTLP_TIMEOUT.
DEFAULT_TIMEOUT = 10.0
DEFAULT_SCHEDULE_DELAY_MS = 5000
DEFAULT_MAX_QUEUE = 2048
DEFAULT_MAX_BATCH = 512
#: Answers worth another try, as OTLP/HTTP defines them.
RETRYABLE = frozenset({429, 502, 503, 504})
ATTEMPTS = 3
#: Spans encoded between pauses of the export thread, and the pause, in seconds.
GIL_BREAK = 32
GIL_PAUSE = 0.00005
SPAN_KIND_INTERNAL = 1
SPAN_KIND_SERVER = 2


class FinishedSpan:
    """One of toolmesh's spans: made current by `toolmesh.tracing.span`, queued here when it ends."""

    __slots__ = (
        "attributes",
        "end",
        "error",
        "kind",
        "name",
        "parent_id",
        "span_id",
        "start",
        "state",
        "trace_id",
    )

    def __init__(
        self,
        name: str,
        kind: int,
        trace_id: int,
        span_id: int,
        parent_id: int,
        state: str,
        attributes: dict[str, Any],
    ) -> None:
        self.name = name
        self.kind = kind
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_id = parent_id
        self.state = state
        self.attributes = attributes
        self.error: str | None = None
        self.start = time.time_ns()
        self.end = 0


@dataclass(frozen=True)
class ExportSettings:
    url: str
    headers: Mapping[str, str]
    timeout: float
    gzip: bool
    certificate: str | None
    schedule_delay: float
    max_queue: int
    max_batch: int

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ExportSettings:
        def setting(name: str) -> str:
            return (
                environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
                or environ.get(f"OTEL_EXPORTER_OTLP_{name}")
                or ""
            ).strip()

        url = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        if not url:
            base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
            url = f"{base.removesuffix('/')}/{TRACES_PATH}"
        headers = {}
        for pair in setting("HEADERS").split(","):
            name, equals, value = pair.partition("=")
            if equals and name.strip():
                headers[urllib.parse.unquote(name.strip()).lower()] = urllib.parse.unquote(value.strip())
        return cls(
            url=url,
            headers=headers,
            timeout=_number(setting("TIMEOUT"), DEFAULT_TIMEOUT),
            gzip=setting("COMPRESSION").lower() == "gzip",
            certificate=setting("CERTIFICATE") or None,
            schedule_delay=_number(environ.get("OTEL_BSP_SCHEDULE_DELAY", ""), DEFAULT_SCHEDULE_DELAY_MS)
            / 1000,
            max_queue=int(_number(environ.get("OTEL_BSP_MAX_QUEUE_SIZE", ""), DEFAULT_MAX_QUEUE)),
            max_batch=int(_number(environ.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", ""), DEFAULT_MAX_BATCH)),
        )


def _number(text: str, default: float) -> float:
    try:
        value = float(text)
    except ValueError:
        return default
    return value if value > 0 else default


class BatchExporter:
    """A bounded queue of finished spans and the thread that exports it. Spans that find the
    queue full are dropped and counted (a collector that is down must not grow the process)."""

    def __init__(self, settings: ExportSettings, resource: Mapping[str, Any], scope: tuple[str, str]) -> None:
        self._settings = settings
        self._encoder = Encoder(resource, scope)
        self._queue: collections.deque[FinishedSpan] = collections.deque()
        self._wake = threading.Event()
        #: One export at a time: the thread's and a caller's `flush` share the connection.
        self._exporting = threading.Lock()
        self._stopping = False
        self._dropped = 0
        self._failing = False
        self._sender = _Sender(settings)
        self._thread = threading.Thread(target=self._run, name="toolmesh-trace-export", daemon=True)
        self._thread.start()

    def add(self, span: FinishedSpan) -> None:
        queued = len(self._queue)
        if queued >= self._settings.max_queue:
            self._dropped += 1
            return
        self._queue.append(span)
        if queued + 1 == self._settings.max_batch:
            self._wake.set()

    def flush(self) -> None:
        """Export everything queued, in the calling thread."""
        with self._exporting:
            while self._queue:
                self._export_batch()

    def shutdown(self) -> None:
        """Stop the thread after it has exported what is queued (the caller bounds the wait)."""
        self._stopping = True
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self._settings.schedule_delay)
            self._wake.clear()
            # What is queued now, in full batches; not until the queue is empty: under steady
            # load calls keep adding spans while a batch is sent, and draining to empty sent
            # them one or two at a time, a POST (and its CPU) per span or so.
            with self._exporting:
                self._export_batch()
                while len(self._queue) >= self._settings.max_batch:
                    self._export_batch()
        self.flush()

    def _export_batch(self) -> None:
        batch: list[FinishedSpan] = []
        while self._queue and len(batch) < self._settings.max_batch:
            batch.append(self._queue.popleft())
        if not batch:
            return
        encoded = []
        for done, span in enumerate(batch, 1):
            if done % GIL_BREAK == 0:
                # Let a request's thread in: without a pause a waiting thread gets the GIL only
                # at the interpreter's switch interval (5 ms), a whole no-op call's time. A real
                # sleep, not sleep(0): that gives the GIL up and takes it straight back before
                # the woken thread runs (a thread waking every 300 µs against a busy encoder,
                # median wake-up delay: sleep(0) every 64 spans 101 µs, 50 µs every 32 73 µs).
                time.sleep(GIL_PAUSE)
            encoded.append(span_bytes(span))
        body = self._encoder.request(encoded)
        dropped, self._dropped = self._dropped, 0
        if dropped:
            log.warning("trace export queue full: spans dropped", extra={"dropped": dropped})
        failure = self._sender.send(body, lambda: self._stopping)
        if failure is not None and not self._failing:
            log.warning("trace export failed", extra={"url": self._settings.url, "error": failure})
        elif failure is None and self._failing:
            log.info("trace export recovered", extra={"url": self._settings.url})
        self._failing = failure is not None


class _Sender:
    """POSTs encoded batches over one kept-alive connection, retried as OTLP/HTTP allows."""

    def __init__(self, settings: ExportSettings) -> None:
        self._settings = settings
        url = urllib.parse.urlsplit(settings.url)
        self._https = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port
        self._path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        self._headers = {**settings.headers, "Content-Type": "application/x-protobuf"}
        if settings.gzip:
            self._headers["Content-Encoding"] = "gzip"
        self._connection: http.client.HTTPConnection | None = None

    def send(self, body: bytes, stopping: Any) -> str | None:
        """None when the collector took the batch, else why not (after the allowed retries)."""
        if self._settings.gzip:
            body = gzip.compress(body)
        failure = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                if stopping():
                    break
                time.sleep(0.5 * 2 ** (attempt - 1))
            try:
                connection = self._connect()
                connection.request("POST", self._path, body, self._headers)
                answer = connection.getresponse()
                answer.read()
            except (OSError, http.client.HTTPException) as exc:
                self._close()
                failure = f"{type(exc).__name__}: {exc}"
                continue
            if answer.status < 300:
                return None
            failure = f"HTTP {answer.status}"
            if answer.status not in RETRYABLE:
                break
        return failure

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            timeout = self._settings.timeout
            if self._https:
                context = ssl.create_default_context(cafile=self._settings.certificate)
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=timeout, context=context
                )
            else:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
