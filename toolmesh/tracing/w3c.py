"""The W3C trace context headers: ``traceparent`` read and written, ``tracestate`` carried as is.

https://www.w3.org/TR/trace-context/ — version ``00``; a later version is read by its first four
fields, as the spec asks. Anything malformed is no parent at all (a new trace), never an error:
the header comes from whoever calls the gateway.
"""

from __future__ import annotations

import re
from typing import NamedTuple

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
#: The W3C trace context as (name, value) pairs: ``(("traceparent", ...), ("tracestate", ...))``.
Carrier = tuple[tuple[str, str], ...]

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\Z")
#: The sampled bit of trace-flags.
SAMPLED = 0x01


class Parent(NamedTuple):
    """A span's parent as a carrier names it."""

    trace_id: int
    span_id: int
    sampled: bool
    state: str


def parse(carrier: Carrier) -> Parent | None:
    """The parent `carrier` names, or None when it names none or names it wrongly."""
    traceparent = state = ""
    for name, value in carrier:
        if name == TRACEPARENT:
            traceparent = value
        elif name == TRACESTATE:
            state = value
    if not traceparent:
        return None
    # Callers nearly always send it already trimmed and in lower case.
    found = _TRACEPARENT.match(traceparent) or _TRACEPARENT.match(traceparent.strip().lower())
    if found is None:
        return None
    version, trace_hex, span_hex, flags, rest = found.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    trace_id, span_id = int(trace_hex, 16), int(span_hex, 16)
    if not trace_id or not span_id:
        return None
    return Parent(trace_id, span_id, bool(int(flags, 16) & SAMPLED), state)


def format_carrier(trace_id: int, span_id: int, sampled: bool, state: str) -> Carrier:
    traceparent = f"00-{trace_id:032x}-{span_id:016x}-{'01' if sampled else '00'}"
    if state:
        return ((TRACEPARENT, traceparent), (TRACESTATE, state))
    return ((TRACEPARENT, traceparent),)
