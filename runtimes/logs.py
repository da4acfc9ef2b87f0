"""Structured logs: one JSON object per line on stderr."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from toolmesh.runtimes.executor import Call

#: LogRecord attributes that are not user-supplied `extra` fields (uvicorn adds color_message).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}

invocations = logging.getLogger("toolmesh.invocations")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD:
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(level: str = "info") -> None:
    """Send toolmesh's logs (and the functions' ctx.logger) to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class InvocationLog:
    """Executor observer that logs one line per finished call."""

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        if invocations.isEnabledFor(logging.INFO):
            invocations.info(
                "invocation",
                extra={
                    "request_id": call.request_id,
                    "session_id": call.session_id,
                    "function": function or call.function[:128],
                    "outcome": outcome,
                    "duration_ms": round(seconds * 1000, 3),
                },
            )


class Observers:
    """Fans one executor event out to several observers."""

    def __init__(self, *observers: Any) -> None:
        self._observers = observers

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        for observer in self._observers:
            observer.finished(call, function, outcome, seconds)


__all__ = ["InvocationLog", "JsonFormatter", "Observers", "configure", "invocations"]
