"""The socket frames (toolmesh/protocol/frames.py), byte for byte."""

from __future__ import annotations

from toolmesh.protocol.frames import HEADER, INVOKE, INVOKE_TRACED, invoke_frame, split_traced
from toolmesh.tracing import Parent


def test_a_traced_invoke_carries_the_trace_context_in_ids_in_front_of_the_request() -> None:
    # Ids whose high bits are set (the trace id's top half, the span id's top bit): no sign lost.
    trace = Parent((0xF1 << 120) | 0xA, (1 << 63) | 0xB, True, "vendor=x=1,other=2")
    traced = invoke_frame(7, b"request bytes", 1.5, trace)
    length, kind, call_id, timeout = HEADER.unpack_from(traced)
    assert (kind, call_id, timeout, length) == (INVOKE_TRACED, 7, 1.5, len(traced) - HEADER.size)
    assert split_traced(traced[HEADER.size :]) == (trace, b"request bytes")
    # No tracestate (the usual case), and not sampled.
    alone = Parent(trace.trace_id, trace.span_id, False, "")
    assert split_traced(invoke_frame(7, b"request bytes", 1.5, alone)[HEADER.size :]) == (
        alone,
        b"request bytes",
    )
    # W3C pairs (a call traced by someone else's span) go as their ids; malformed ones as untraced.
    pairs = (
        ("traceparent", f"00-{trace.trace_id:032x}-{trace.span_id:016x}-01"),
        ("tracestate", trace.state),
    )
    assert split_traced(invoke_frame(7, b"request bytes", 1.5, pairs)[HEADER.size :]) == (
        trace,
        b"request bytes",
    )
    malformed = (("traceparent", "00-not-hex-01"),)
    assert invoke_frame(7, b"request bytes", 1.5, malformed) == invoke_frame(7, b"request bytes", 1.5, ())
    # Untraced calls keep the plain frame: nothing added when tracing is off.
    assert invoke_frame(7, b"request bytes", 1.5, ()) == HEADER.pack(13, INVOKE, 7, 1.5) + b"request bytes"
