"""Spans made through the OpenTelemetry API (a function's own, the MCP SDK's) nest under
toolmesh's: the tracer provider set as the global one hands out tracers that, when no parent
context is given, pass the innermost current span (see `scope`) as the parent.

Imported only once tracing is on (it imports the SDK).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from opentelemetry import context as api
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from toolmesh.tracing.scope import Scope, innermost

_FLAGS = (trace.TraceFlags(0), trace.TraceFlags(1))


def _context_reader() -> Callable[[], Context]:
    # OpenTelemetry's default runtime context keeps the current context in a context variable:
    # reading it is one C call, where `get_current()` is a chain of Python calls that a traced
    # request paid two or three times. Another runtime context (OTEL_PYTHON_CONTEXT) is asked.
    variable = getattr(getattr(api, "_RUNTIME_CONTEXT", None), "_current_context", None)
    if isinstance(variable, contextvars.ContextVar):
        return variable.get
    return api.get_current


#: OpenTelemetry's current context (an empty one while no API span or value is current).
api_context = _context_reader()


def api_span_context(context: Context) -> Any:
    """The span context of the API span current in `context` (an invalid one if none)."""
    return trace.get_current_span(context).get_span_context()


def parent_context(context: Context | None) -> Context | None:
    """`context` if the caller gave one, else one holding toolmesh's current span when that is
    the innermost (None lets OpenTelemetry use its own current context)."""
    if context is not None:
        return context
    found = innermost(api_context, api_span_context)
    if not isinstance(found, Scope):
        return None
    state = trace.TraceState.from_header([found.state]) if found.state else None
    parent = trace.SpanContext(found.trace_id, found.span_id, False, _FLAGS[found.sampled], state)
    return trace.set_span_in_context(trace.NonRecordingSpan(parent))


class NestingTracer(trace.Tracer):
    """An SDK tracer whose spans without an explicit parent nest under toolmesh's current span."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    def start_span(self, name: str, context: Context | None = None, *args: Any, **kwargs: Any) -> trace.Span:
        return self._tracer.start_span(name, parent_context(context), *args, **kwargs)

    def start_as_current_span(
        self, name: str, context: Context | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        return self._tracer.start_as_current_span(name, parent_context(context), *args, **kwargs)


class NestingTracerProvider(TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return NestingTracer(super().get_tracer(*args, **kwargs))
