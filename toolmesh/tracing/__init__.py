"""OpenTelemetry tracing for the gateway and its pods: off unless the OTEL_* environment asks.

Tracing is on when OTEL_TRACES_EXPORTER names ``otlp``, or when it is unset and an OTLP endpoint
is (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true
or OTEL_TRACES_EXPORTER=none turn it off. The rest of the standard settings (endpoint, headers,
timeout, compression, OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES) are read once,
at `start`.

Two kinds of span go out, to the same OTLP/HTTP endpoint:
- toolmesh's own (the request, route, queue wait, cold start, the function's call) are made
  here and exported by `otlp_batch`: a call's path only takes ids, a clock reading and a queue
  append, so tracing costs a no-op call a few percent rather than the SDK's ~100 µs a span.
- spans that other code makes through the OpenTelemetry API (a function's own, the MCP SDK's)
  go through the SDK's tracer provider, set as the global one, and its standard OTLP exporter.
They nest both ways (`scope`, `bridge`): toolmesh's spans are current in a context variable of
their own, the global provider's tracers make API spans opened inside one its children, and
`carrier` sends on whichever span is innermost.

Off, nothing here imports OpenTelemetry and every call below is one global lookup: `span`
returns a shared null context and `carrier` an empty tuple. The trace context travels as a
`Carrier`, the W3C ``traceparent`` and ``tracestate`` pairs, which is the shape gRPC metadata
takes: in gRPC metadata to pods and to the gateway's Mesh service, and in `Context.trace_context`
for ctx.invoke. Within a process and to the pods the gateway runs itself (the socket protocol's
INVOKE_TRACED frame) it stays in ids, a `Parent` (`context`): `Call.trace` is either (`Trace`).

Tracing is per process (OpenTelemetry's tracer provider is global): `start` once at start-up,
after any fork (the export thread does not cross one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
from collections.abc import Mapping
from typing import Any

from toolmesh.tracing.otlp_batch import SPAN_KIND_INTERNAL, SPAN_KIND_SERVER
from toolmesh.tracing.scope import Scope, current, innermost
from toolmesh.tracing.w3c import (
    TRACEPARENT,
    TRACESTATE,
    Carrier,
    Parent,
    Trace,
    as_carrier,
    format_carrier,
    new_parent,
    parse,
    parse_traceparent,
)

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
    """The started tracing: toolmesh's exporter and sampler, and the SDK for everyone else's spans."""

    def __init__(self, service: str, environ: Mapping[str, str]) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from toolmesh._version import __version__
        from toolmesh.tracing.bridge import NestingTracerProvider, api_context, api_span_context
        from toolmesh.tracing.otlp_batch import BatchExporter, ExportSettings
        from toolmesh.tracing.sampling import sampler_from

        resource = Resource.create({SERVICE_NAME: service})
        # No shutdown at exit: `shutdown` below bounds it, which the SDK's own handler would not.
        self.provider = NestingTracerProvider(resource=resource, shutdown_on_exit=False)
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        # Global, so that spans a function (or the MCP SDK) makes nest under the current call's.
        trace.set_tracer_provider(self.provider)
        self.exporter = BatchExporter(
            ExportSettings.from_environ(environ), resource.attributes, ("toolmesh", __version__)
        )
        self.sample = sampler_from(environ)
        self.api_context = api_context
        self.api_span_context = api_span_context


_active: _Tracing | None = None


def start(service: str) -> None:
    """Turn tracing on in this process, as `service` (a second call changes nothing)."""
    global _active
    if _active is None:
        _active = _Tracing(service, os.environ)
        log.info("tracing on", extra={"service": service})


def enabled() -> bool:
    return _active is not None


def shutdown(timeout: float = FLUSH_TIMEOUT) -> None:
    """Export the spans still buffered and stop (a pod's drain, the gateway's stop), waiting at
    most `timeout` seconds: with the collector down the exporters retry for a while, which must
    not hold the process's exit. The export goes on in a daemon thread, which the exit then ends."""
    global _active
    if _active is not None:
        stopping = _active

        def stop() -> None:
            stopping.exporter.shutdown()
            stopping.provider.shutdown()

        exporting = threading.Thread(target=stop, name="toolmesh-trace-flush", daemon=True)
        _active = None
        exporting.start()
        exporting.join(timeout)


def flush() -> None:
    """Export the spans still buffered, and carry on."""
    if _active is not None:
        _active.exporter.flush()
        _active.provider.force_flush()


def span(
    name: str,
    attributes: Mapping[str, str | int | float | bool] | None = None,
    *,
    parent: Trace | None = None,
    server: bool = False,
) -> contextlib.AbstractContextManager[Any]:
    """A span around the block, current within it, yielding the span (None when tracing is off).
    Its parent is the current span, or the one `parent` names (an empty or malformed carrier:
    none, a new trace). `server`: the span of a request received from another process. The span
    keeps `attributes` if it is a dict (callers pass a new one), else a copy."""
    # One function, not a call into the started tracing's: each call on a request's path costs
    # a few µs more in a server than in a loop (its code and data are no longer in the caches).
    active = _active
    if active is None:
        return _NO_SPAN
    state = ""
    if type(parent) is Parent:  # ids, as the gateway sends them to a local pod
        found: Parent | None = parent
    else:
        found = parse(parent) if parent else None  # type: ignore[arg-type]
    if found is not None:
        trace_id, parent_id, sampled, state = found
        sampled = active.sample(trace_id, sampled)
    elif parent is None and (inner := innermost(active.api_context, active.api_span_context)) is not None:
        if isinstance(inner, Scope):
            trace_id, parent_id, state = inner.trace_id, inner.span_id, inner.state
            sampled = inner.sampled
        else:
            trace_id, parent_id, sampled = inner.trace_id, inner.span_id, inner.trace_flags.sampled
            state = inner.trace_state.to_header() if inner.trace_state else ""
    else:
        # No parent, or a carrier that names none properly: a new trace.
        trace_id, parent_id = random.getrandbits(128) or 1, 0
        sampled = active.sample(trace_id, None)
    return Scope(
        name,
        SPAN_KIND_SERVER if server else SPAN_KIND_INTERNAL,
        trace_id,
        random.getrandbits(64) or 1,
        parent_id,
        state,
        attributes if isinstance(attributes, dict) else dict(attributes or {}),
        sampled,
        active.exporter,
        active.api_context(),
    )


def context() -> Parent | tuple[()]:
    """The current span's trace context in ids, to send with a call (empty when tracing is off
    or no span is current)."""
    if _active is None:
        return ()
    scope = current.get()
    if scope is not None and _active.api_context() is scope.outer:
        return scope.context()  # the common case, without `innermost`'s call
    inner = innermost(_active.api_context, _active.api_span_context)
    if inner is None:
        return ()
    if isinstance(inner, Scope):
        return inner.context()
    state = inner.trace_state.to_header() if inner.trace_state else ""
    return new_parent((inner.trace_id, inner.span_id, inner.trace_flags.sampled, state))


def carrier() -> Carrier:
    """`context` as W3C pairs (empty when tracing is off or no span is current)."""
    if _active is None:
        return ()
    found = context()
    return format_carrier(*found) if found else ()


def carrier_from(pairs: Any) -> Carrier:
    """The trace context among (name, value) pairs (gRPC metadata, lower-cased headers)."""
    return tuple((k, v) for k, v in pairs if k in (TRACEPARENT, TRACESTATE))


def mark_failed(current: Any, description: str) -> None:
    """Set a span's status to error (no-op for the None of tracing off)."""
    if current is not None:
        current.error = description


__all__ = [
    "GATEWAY_SERVICE",
    "RUNTIME_SERVICE",
    "TRACEPARENT",
    "TRACESTATE",
    "Carrier",
    "Parent",
    "Trace",
    "as_carrier",
    "carrier",
    "carrier_from",
    "context",
    "enabled",
    "flush",
    "mark_failed",
    "parse_traceparent",
    "service_to_trace",
    "shutdown",
    "span",
    "start",
]
