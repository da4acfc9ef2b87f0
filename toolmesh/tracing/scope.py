"""Which span is current: toolmesh's own, kept in a context variable of its own, or one made
through the OpenTelemetry API.

A toolmesh span made current touches only its own context variable, not OpenTelemetry's
context (building a span context, a non-recording span and a new context for each span and
attaching it cost more than the span itself). When it opens it notes OpenTelemetry's current
context (one context variable read, not the API's chain of calls, see `bridge.api_context`):
a context current now that was not then holds an API span opened inside it, so that one is the
innermost. API spans find toolmesh's through `bridge.NestingTracer`, which passes it as their
parent.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from typing import Any

from toolmesh.tracing.otlp_batch import BatchExporter, FinishedSpan
from toolmesh.tracing.w3c import Parent, new_parent


class Scope(FinishedSpan):
    """One of toolmesh's spans made current for a block, then ended and queued for export. The
    span and its scope are one object: a call's path allocates one per span."""

    __slots__ = ("_exporter", "_token", "outer", "sampled")

    def __init__(
        self,
        name: str,
        kind: int,
        trace_id: int,
        span_id: int,
        parent_id: int,
        state: str,
        attributes: dict[str, Any],
        sampled: bool,
        exporter: BatchExporter,
        outer: Any,
    ) -> None:
        # FinishedSpan's fields set here, not through its __init__: a call less on a call's path.
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
        self.sampled = sampled
        self._exporter = exporter
        #: OpenTelemetry's context current when this span opened.
        self.outer = outer

    def context(self) -> Parent:
        """This span as the parent of a call made within it."""
        return new_parent((self.trace_id, self.span_id, self.sampled, self.state))

    def __enter__(self) -> Scope:
        self._token = current.set(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        current.reset(self._token)
        if error is not None and kind is not None:
            self.error = kind.__name__
        self.end = time.time_ns()
        if self.sampled:
            self._exporter.add(self)


current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("toolmesh_span", default=None)


def innermost(api_context: Callable[[], Any], api_span_context: Callable[[Any], Any]) -> Scope | Any | None:
    """The innermost current span: a `Scope`, an API span's (valid) span context, or None.
    `api_context` reads OpenTelemetry's current context; `api_span_context` the span context
    of the span in one."""
    scope = current.get()
    context = api_context()
    if scope is not None and context is scope.outer:
        return scope
    if context:  # something was attached to OpenTelemetry's context: perhaps an API span
        found = api_span_context(context)
        if found.is_valid:
            return found
    return scope
