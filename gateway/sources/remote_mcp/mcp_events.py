"""A remote server's notifications during a call, as the call's events (runtimes/functions/
call_events.py): `notifications/progress` for the call's token as ProgressEvents, and
`notifications/message` as LogEvents, for a caller that asked for them, bounded as a pod
bounds a function's."""

from __future__ import annotations

import json
import logging
from typing import Any

from toolmesh.runtimes.functions.call_events import (
    MAX_EXTRA_BYTES,
    MAX_LOG_EVENTS,
    MAX_MESSAGE_CHARS,
    MAX_PROGRESS_EVENTS,
    Listener,
    LogEvent,
    ProgressEvent,
)

#: MCP's (syslog's) levels as Python's.
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def mcp_level(level: int) -> str:
    """The MCP level that asks for Python's `level` and above."""
    for name in ("debug", "info", "warning", "error"):
        if LEVELS[name] >= level:
            return name
    return "critical"


class CallNotifications:
    """Hears one call's notifications (`heard`) and tells its listener."""

    def __init__(self, listener: Listener, function: str, token: str) -> None:
        self._listener = listener
        self._function = function
        #: The progress token the call's request carries (`_meta.progressToken`).
        self.token = token
        #: The lowest MCP level of the log messages the caller wants; None: none.
        self.log_level = mcp_level(listener.log_level) if listener.log_level else None
        self._logs = 0
        self._progress = 0

    def heard(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if not isinstance(params, dict):
            return
        method = message.get("method")
        if method == "notifications/progress" and self._listener.progress:
            if params.get("progressToken") != self.token or self._progress >= MAX_PROGRESS_EVENTS:
                return
            self._progress += 1
            total = params.get("total")
            text = params.get("message")
            self._listener.deliver(
                ProgressEvent(
                    float(params.get("progress") or 0),
                    float(total) if isinstance(total, int | float) else None,
                    text if isinstance(text, str) else None,
                )
            )
        elif method == "notifications/message" and self._listener.log_level:
            level = LEVELS.get(str(params.get("level")), logging.INFO)
            if level < self._listener.log_level or self._logs >= MAX_LOG_EVENTS:
                return
            self._logs += 1
            self._listener.deliver(_log(level, params.get("data"), self._function))


def _log(level: int, data: Any, function: str) -> LogEvent:
    """A message's `data` as a record: a string is the message; an object's `message` is, and
    its other fields are the extra fields."""
    if isinstance(data, str):
        return LogEvent(level, data[:MAX_MESSAGE_CHARS], function)
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        fields = {key: value for key, value in data.items() if key != "message"}
        extra = json.dumps(fields, separators=(",", ":")).encode() if fields else b""
        if len(extra) > MAX_EXTRA_BYTES:
            extra = b'{"extra":"too large to send"}'
        return LogEvent(level, data["message"][:MAX_MESSAGE_CHARS], function, extra)
    return LogEvent(level, json.dumps(data, separators=(",", ":"))[:MAX_MESSAGE_CHARS], function)
