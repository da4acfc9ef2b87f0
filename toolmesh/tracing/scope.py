"""Which span is current: toolmesh's own, kept in a context variable of its own, or one made
through the OpenTelemetry API.

A toolmesh span made current touches only its own context variable, not OpenTelemetry's
context (building a span context, a non-recording span and a new context for each span and
attaching it cost more than the span itself). When it opens it notes which API span was
current; an API span current now that was not then was opened inside it, so it is the
innermost. API spans find toolmesh's through `bridge.NestingTracer`, which passes it as their
parent.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from typing import Any

from toolmesh.tracing.otlp_batch import BatchExporter, FinishedSpan
from toolmesh.tracing.w3c import Carrier, format_carrier


class Scope:
    """One of toolmesh's spans made current for a block, then ended and queued for export."""

    __slots__ = ("_carrier", "_exporter", "_token", "outer", "sampled", "span")

    def __init__(self, span: FinishedSpan, sampled: bool, exporter: BatchExporter, outer: Any) -> None:
        self.span = span
        self.sampled = sampled
        self._exporter = exporter
        #: The API span current when this one opened (OpenTelemetry's invalid span if none).
        self.outer = outer
        self._carrier: Carrier | None = None

    def carrier(self) -> Carrier:
        if self._carrier is None:
            span = self.span
            self._carrier = format_carrier(span.trace_id, span.span_id, self.sampled, span.state)
        return self._carrier

    def __enter__(self) -> FinishedSpan:
        self._token = current.set(self)
        return self.span

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        current.reset(self._token)
        span = self.span
        if error is not None and kind is not None:
            span.error = kind.__name__
        span.end = time.time_ns()
        if self.sampled:
            self._exporter.add(span)


current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("toolmesh_span", default=None)


def innermost(current_api_span: Callable[[], Any]) -> Scope | Any | None:
    """The innermost current span: a `Scope`, an API span's (valid) span context, or None."""
    scope = current.get()
    api = current_api_span()
    if scope is not None and api is scope.outer:
        return scope
    found = api.get_span_context()
    if found.is_valid:
        return found
    return scope
