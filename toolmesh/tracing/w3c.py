"""The W3C trace context headers: ``traceparent`` read and written, ``tracestate`` carried as is.

https://www.w3.org/TR/trace-context/ — version ``00``; a later version is read by its first four
fields, as the spec asks. Anything malformed is no parent at all (a new trace), never an error:
the header comes from whoever calls the gateway.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
#: The W3C trace context as (name, value) pairs: ``(("traceparent", ...), ("tracestate", ...))``.
Carrier = tuple[tuple[str, str], ...]

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\Z")
_HEX_OR_DASH = frozenset("0123456789abcdef-")
_ODD = "13579bdf"
#: A version 00 traceparent's length: 2 + 32 + 16 + 2 hex digits and three dashes.
_LENGTH = 55
#: The sampled bit of trace-flags.
SAMPLED = 0x01


class Parent(NamedTuple):
    """A span's parent as a carrier names it, in ids: what the gateway sends its local pods
    (no hex written and read back per call)."""

    trace_id: int
    span_id: int
    sampled: bool
    state: str


#: A `Parent` from its four fields in one C call: the named tuple's own __new__ is a Python call,
#: which costs about a µs on a request's cold path.
new_parent: Callable[[tuple[int, int, bool, str]], Parent] = functools.partial(tuple.__new__, Parent)

#: A call's trace context: the W3C pairs as they came from another process, or the ids of the
#: span the call was made in; empty when the call is not traced.
Trace = Carrier | Parent


def parse(carrier: Carrier) -> Parent | None:
    """The parent `carrier` names, or None when it names none or names it wrongly."""
    traceparent = state = ""
    for name, value in carrier:
        if name == TRACEPARENT:
            traceparent = value
        elif name == TRACESTATE:
            state = value
    return parse_traceparent(traceparent, state) if traceparent else None


def parse_traceparent(traceparent: str, state: str) -> Parent | None:
    """The parent a ``traceparent`` names (with its ``tracestate``), or None when it names it
    wrongly."""
    if (
        len(traceparent) == _LENGTH
        and _HEX_OR_DASH.issuperset(traceparent)
        and traceparent.count("-") == 3
        and traceparent[2] == traceparent[35] == traceparent[52] == "-"
        and traceparent.startswith("00")
    ):
        # What nearly every caller sends (and toolmesh itself): version 00, lower-case hex.
        # Read with as few calls as can check it (each costs ~0.5 µs on a request's cold path),
        # and without the regular expression, which costs more than the rest of a span.
        trace_id, span_id = int(traceparent[3:35], 16), int(traceparent[36:52], 16)
        if not trace_id or not span_id:
            return None
        # Sampled is the flags' lowest bit, so an odd last digit.
        return new_parent((trace_id, span_id, traceparent[54] in _ODD, state))
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


def as_carrier(trace: Trace) -> Carrier:
    """`trace` as W3C pairs (gRPC metadata, `Context.trace_context`)."""
    if type(trace) is Parent:
        return format_carrier(*trace)
    return trace  # type: ignore[return-value]


def format_carrier(trace_id: int, span_id: int, sampled: bool, state: str) -> Carrier:
    traceparent = f"00-{trace_id:032x}-{span_id:016x}-{'01' if sampled else '00'}"
    if state:
        return ((TRACEPARENT, traceparent), (TRACESTATE, state))
    return ((TRACEPARENT, traceparent),)
