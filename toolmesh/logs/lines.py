"""Logs on stderr: one JSON object per line for machines, or, for a person at a terminal
(`toolmesh up` on a TTY, `--log-format text`), the same fields as a readable line.

Both sides write through here: the pods (their per-call line, runtimes/pod/invocation_log.py)
and the gateway (its access and audit lines, through `LineBuffer`)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

#: LogRecord attributes that are not user-supplied `extra` fields (uvicorn adds color_message).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}

invocations = logging.getLogger("toolmesh.invocations")
#: The gateway's line per HTTP request and Mesh gRPC call (gateway/http/request_log.py, grpc/rpc_log.py).
access = logging.getLogger("toolmesh.access")

#: Where log lines go when not stderr itself (a pod whose stderr is framed output, see
#: isolation/output_pipe.py, logs to a duplicate of the original).
_stream: list[TextIO] = []


#: How lines are written: "json" or "text" (`configure`).
LOG_FORMATS = ("json", "text")
_format: list[str] = ["json"]


def text_line(entry: Mapping[str, Any]) -> str:
    """A JSON log entry as a person reads it: time, level, logger, message, then key=value."""
    when = time.strftime("%H:%M:%S", time.localtime(float(entry.get("ts", time.time()))))
    logger = str(entry.get("logger", "")).removeprefix("toolmesh.")
    line = f"{when} {str(entry.get('level', '')).upper():7} {logger}: {entry.get('msg', '')}"
    extras = [
        f"{key}={value}" for key, value in entry.items() if key not in _SHOWN and value not in ("", None)
    ]
    text = line + ("  " + " ".join(extras) if extras else "")
    return text + (f"\n{entry['exc']}" if entry.get("exc") else "")


_SHOWN = frozenset(("ts", "level", "logger", "msg", "exc"))


class JsonFormatter(logging.Formatter):
    def entry(self, record: logging.LogRecord) -> dict[str, Any]:
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
        return entry

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(self.entry(record), default=str)


class TextFormatter(JsonFormatter):
    def format(self, record: logging.LogRecord) -> str:
        return text_line(self.entry(record))


def log_stream() -> TextIO:
    """The stream log lines are written to."""
    return _stream[0] if _stream else sys.stderr


def use_stream(stream: TextIO) -> None:
    """Write log lines to `stream` from now on (the root logger's handlers included)."""
    _stream[:] = [] if stream is sys.stderr else [stream]
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(stream)


def configure(level: str = "info", format: str = "json") -> None:
    """Send toolmesh's logs (and the functions' ctx.logger) to stderr, as JSON lines or as text."""
    _format[0] = format
    handler = logging.StreamHandler(log_stream())
    handler.setFormatter(TextFormatter() if format == "text" else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class LineBuffer:
    """JSON lines written together: at most every `FLUSH_SECONDS`, or at once when
    `MAX_BUFFERED` are waiting. For the logs written once per call or request, where the
    logging machinery (a LogRecord, a lock, a write per line) would cost more than the call.
    Lines are added on the event loop's thread. `keep_json`: JSON lines even when the log is
    read as text (a file for machines, such as the audit trail's)."""

    FLUSH_SECONDS = 0.05
    MAX_BUFFERED = 256

    def __init__(self, stream: TextIO | None = None, *, keep_json: bool = False) -> None:
        self._stream = stream
        self._keep_json = keep_json
        self._lines: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def add(self, line: str) -> None:
        """Buffer one line (ending in a newline)."""
        self._lines.append(line)
        if len(self._lines) >= self.MAX_BUFFERED:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._lines:
            stream = self._stream or log_stream()
            # A person reads these: no hot path to keep cheap.
            if _format[0] == "text" and not self._keep_json:
                self._lines[:] = [text_line(json.loads(line)) + "\n" for line in self._lines]
            stream.write("".join(self._lines))
            stream.flush()
            self._lines.clear()


__all__ = [
    "LOG_FORMATS",
    "JsonFormatter",
    "LineBuffer",
    "TextFormatter",
    "access",
    "configure",
    "invocations",
    "log_stream",
    "text_line",
    "use_stream",
]
