"""OpenTelemetry tracing for the gateway and its pods: off unless the OTEL_* environment asks.

Tracing is on when OTEL_TRACES_EXPORTER names ``otlp``, or when it is unset and an OTLP endpoint
is (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true
or OTEL_TRACES_EXPORTER=none turn it off. Spans go out through the OTLP/HTTP exporter and a
BatchSpanProcessor, which read the rest of their OTEL_* settings (endpoint, headers, sampler,
OTEL_BSP_SCHEDULE_DELAY...) from the process's environment themselves.

Off, nothing here imports OpenTelemetry and every call below is one global lookup: `span`
returns a shared null context and `carrier` an empty tuple. The trace context travels as a
`Carrier`, the W3C ``traceparent`` and ``tracestate`` pairs, which is the shape gRPC metadata
takes: in gRPC metadata to pods and to the gateway's Mesh service, in the socket protocol's
INVOKE_TRACED frame, and in `Call.trace` / `Context.trace_context` for ctx.invoke.

Tracing is per process (OpenTelemetry's tracer provider is global): `start` once at start-up.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
#: The W3C trace context as (name, value) pairs: ``(("traceparent", ...), ("tracestate", ...))``.
Carrier = tuple[tuple[str, str], ...]

SDK_DISABLED_ENV = "OTEL_SDK_DISABLED"
EXPORTER_ENV = "OTEL_TRACES_EXPORTER"
SERVICE_NAME_ENV = "OTEL_SERVICE_NAME"
ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
#: The gateway's service name when OTEL_SERVICE_NAME does not give one.
GATEWAY_SERVICE = "toolmesh-gateway"
#: A pod's, followed by its runtime's name where the gateway starts it.
RUNTIME_SERVICE = "toolmesh-runtime"

#: Longest a stopping process waits for its last spans to be exported.
FLUSH_TIMEOUT = 5.0

log = logging.getLogger("toolmesh.tracing")
_NO_SPAN = contextlib.nullcontext(None)


def service_to_trace(environ: Mapping[str, str], default: str) -> str | None:
    """The service name to trace as (OTEL_SERVICE_NAME, else `default`), or None when `environ`
    does not turn tracing on. Read once, at start-up, by the gateway and by pods."""
    if environ.get(SDK_DISABLED_ENV, "").strip().lower() == "true":
        return None
    exporters = {e.strip().lower() for e in environ.get(EXPORTER_ENV, "").split(",") if e.strip()}
    if exporters:
        if "otlp" not in exporters:
            if exporters != {"none"}:
                log.warning(
                    "tracing off: only the otlp exporter is supported", extra={"exporters": sorted(exporters)}
                )
            return None
    elif not any(environ.get(name) for name in ENDPOINT_ENVS):
        return None
    return environ.get(SERVICE_NAME_ENV) or default


class _Tracing:
    """The started SDK: a tracer, its provider and the W3C propagator."""

    def __init__(self, service: str) -> None:
        from opentelemetry import context, trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        # No shutdown at exit: `shutdown` below bounds it, which the SDK's own handler would not.
        resource = Resource.create({SERVICE_NAME: service})
        self.provider: TracerProvider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        # Global, so that spans a function makes with opentelemetry.trace nest under its call's.
        trace.set_tracer_provider(self.provider)
        self.tracer: Tracer = self.provider.get_tracer("toolmesh")
        self.propagator: TraceContextTextMapPropagator = TraceContextTextMapPropagator()
        self.kinds = {"server": trace.SpanKind.SERVER, "internal": trace.SpanKind.INTERNAL}
        self.error = trace.StatusCode.ERROR
        self.status = trace.Status
        self.attach = context.attach
        self.detach = context.detach
        self.in_context = trace.set_span_in_context


class _Scope:
    """A started span made current for a block, then ended. The SDK's start_as_current_span
    does the same through two generator-based context managers, at twice the cost (about
    20 µs a span here), which a call pays on every hop."""

    __slots__ = ("_span", "_token", "_tracing")

    def __init__(self, tracing: _Tracing, span: Any) -> None:
        self._tracing = tracing
        self._span = span

    def __enter__(self) -> Any:
        self._token = self._tracing.attach(self._tracing.in_context(self._span))
        return self._span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        self._tracing.detach(self._token)
        if error is not None and kind is not None:
            self._span.set_status(self._tracing.status(self._tracing.error, kind.__name__))
        self._span.end()


_active: _Tracing | None = None


def start(service: str) -> None:
    """Turn tracing on in this process, as `service` (a second call changes nothing)."""
    global _active
    if _active is None:
        _active = _Tracing(service)
        log.info("tracing on", extra={"service": service})


def enabled() -> bool:
    return _active is not None


def shutdown(timeout: float = FLUSH_TIMEOUT) -> None:
    """Export the spans still buffered and stop (a pod's drain, the gateway's stop), waiting at
    most `timeout` seconds: with the collector down the exporter retries for up to its own
    timeout, which must not hold the process's exit. The export goes on in a daemon thread,
    which the exit then ends."""
    global _active
    if _active is not None:
        exporting = threading.Thread(
            target=_active.provider.shutdown, name="toolmesh-trace-flush", daemon=True
        )
        _active = None
        exporting.start()
        exporting.join(timeout)


def flush() -> None:
    """Export the spans still buffered, and carry on."""
    if _active is not None:
        _active.provider.force_flush()


def span(
    name: str,
    attributes: Mapping[str, str | int | float | bool] | None = None,
    *,
    parent: Carrier | None = None,
    server: bool = False,
) -> contextlib.AbstractContextManager[Any]:
    """A span around the block, current within it, yielding the span (None when tracing is off).
    Its parent is the current span, or the one `parent` names (an empty carrier: none, a new
    trace). `server`: the span of a request received from another process."""
    if _active is None:
        return _NO_SPAN
    context = None if parent is None else _active.propagator.extract(dict(parent))
    kind = _active.kinds["server" if server else "internal"]
    return _Scope(_active, _active.tracer.start_span(name, context, kind, attributes))


def carrier() -> Carrier:
    """The current span's trace context, to send with a call to another process (empty when
    tracing is off or no span is current)."""
    if _active is None:
        return ()
    found: dict[str, str] = {}
    _active.propagator.inject(found)
    return tuple(found.items())


def carrier_from(pairs: Any) -> Carrier:
    """The trace context among (name, value) pairs (gRPC metadata, lower-cased headers)."""
    return tuple((k, v) for k, v in pairs if k in (TRACEPARENT, TRACESTATE))


def mark_failed(current: Any, description: str) -> None:
    """Set a span's status to error (no-op for the None of tracing off)."""
    if current is not None and _active is not None:
        current.set_status(_active.status(_active.error, description))


__all__ = [
    "GATEWAY_SERVICE",
    "RUNTIME_SERVICE",
    "TRACEPARENT",
    "TRACESTATE",
    "Carrier",
    "carrier",
    "carrier_from",
    "enabled",
    "flush",
    "mark_failed",
    "service_to_trace",
    "shutdown",
    "span",
    "start",
]
