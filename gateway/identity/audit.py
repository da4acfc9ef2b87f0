"""The audit trail: one structured record per function call on the `toolmesh.audit` logger.

    {"logger": "toolmesh.audit", "msg": "call", "principal": "alice", "client_id": "console",
     "function": "weather.get_forecast", "outcome": "ok", "duration_ms": 12.3,
     "request_id": "...", "trace_id": "4bf9..."}

Who (the token's subject or the key's name, and the token's client), what (the function, as
asked for: a refused name is recorded too), how it ended and how long it took, and the ids
that join it to the access log and the trace. Never the arguments or the result. Route the
logger like any other (a file handler, an OTLP log exporter); off when it is not enabled for INFO.
"""

from __future__ import annotations

import logging

from toolmesh.tracing import Parent

audit_log = logging.getLogger("toolmesh.audit")


def record(
    principal: str,
    client_id: str,
    function: str,
    outcome: str,
    seconds: float,
    request_id: str,
    trace: object = (),
) -> None:
    """Write one call's record (`trace`: the call's trace context, empty when untraced)."""
    if not audit_log.isEnabledFor(logging.INFO):
        return
    trace_id = f"{trace.trace_id:032x}" if isinstance(trace, Parent) else ""
    audit_log.info(
        "call",
        extra={
            "principal": principal,
            "client_id": client_id,
            "function": function,
            "outcome": outcome,
            "duration_ms": round(seconds * 1000, 3),
            "request_id": request_id,
            "trace_id": trace_id,
        },
    )
