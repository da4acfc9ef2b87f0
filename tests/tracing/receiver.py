"""A real OTLP/HTTP trace receiver on loopback: POST /v1/traces with an ExportTraceServiceRequest."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int = 0
    trace_state: str = ""
    attributes: dict[str, Any] = field(default_factory=dict, compare=False)
    status: tuple[int, str] = (0, "")


class Receiver(http.server.ThreadingHTTPServer):
    """Keeps every span it is sent; `failures` answers the next requests with that status first."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[ReceivedSpan] = []
        self.headers: list[dict[str, str]] = []
        self.failures: list[int] = []
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def wait_for(self, service: str, count: int, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if sum(span.service == service for span in self.spans) >= count:
                    return
            time.sleep(0.05)


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.headers.append({k.lower(): v for k, v in self.headers.items()})
            failure = self.server.failures.pop(0) if self.server.failures else None
        if failure is not None:
            self.send_response(failure)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with self.server.lock:
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.server.spans.append(
                            ReceivedSpan(
                                resource["service.name"],
                                span.name,
                                span.trace_id.hex(),
                                span.span_id.hex(),
                                span.parent_span_id.hex(),
                                span.kind,
                                span.trace_state,
                                {a.key: _value(a.value) for a in span.attributes},
                                (span.status.code, span.status.message),
                            )
                        )
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def running_receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
