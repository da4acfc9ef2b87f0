"""The audit trail: one JSON line per function call, to the log and to `[gateway] audit_file`.

    {"ts": 1795651200.123456, "level": "info", "logger": "toolmesh.audit", "msg": "call",
     "principal": "alice", "client_id": "console", "function": "weather.get_forecast",
     "outcome": "ok", "duration_ms": 12.3, "request_id": "...", "trace_id": "4bf9..."}

Who (the token's subject or the key's name, and the token's client), what (the function, as
asked for: a refused name is recorded too), how it ended and how long it took, and the ids
that join it to the access log and the trace. Never the arguments or the result.

Lines are buffered and written together (LineBuffer): a record per call through `logging` cost
more than a no-op call's own work. The log line goes out while `toolmesh.audit` is enabled for
INFO (so the usual `--log-level` and logger settings apply); the file, when configured, gets
every record, as JSON lines, appended (so logrotate's copytruncate and shippers' tailing work).
"""

from __future__ import annotations

import logging
import time
from json.encoder import encode_basestring_ascii as _quote
from pathlib import Path

from toolmesh.logs.lines import LineBuffer
from toolmesh.tracing import Parent

audit_log = logging.getLogger("toolmesh.audit")


class AuditTrail:
    """Where a gateway's audit records go: its log and, optionally, a file of their own."""

    def __init__(self, file: Path | None = None) -> None:
        self._log = LineBuffer() if audit_log.isEnabledFor(logging.INFO) else None
        self._stream = file.open("a", encoding="utf-8") if file is not None else None
        self._file = LineBuffer(self._stream, keep_json=True) if self._stream is not None else None

    def record(
        self,
        principal: str,
        client_id: str,
        function: str,
        outcome: str,
        seconds: float,
        request_id: str,
        trace: object = (),
    ) -> None:
        """Write one call's record (`trace`: the call's trace context, empty when untraced)."""
        if self._log is None and self._file is None:
            return
        trace_id = f"{trace.trace_id:032x}" if isinstance(trace, Parent) else ""
        line = (
            f'{{"ts": {time.time():.6f}, "level": "info", "logger": "toolmesh.audit", "msg": "call", '
            f'"principal": {_quote(principal)}, "client_id": {_quote(client_id)}, '
            f'"function": {_quote(function[:256])}, "outcome": {_quote(outcome)}, '
            f'"duration_ms": {seconds * 1000:.3f}, "request_id": {_quote(request_id)}, '
            f'"trace_id": "{trace_id}"}}\n'
        )
        if self._log is not None:
            self._log.add(line)
        if self._file is not None:
            self._file.add(line)

    def close(self) -> None:
        """Write what is buffered and close the file."""
        if self._log is not None:
            self._log.flush()
        if self._file is not None and self._stream is not None:
            self._file.flush()
            self._stream.close()
            self._file = None
