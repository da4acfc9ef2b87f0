"""The pod's one log line per finished call, and the fan-out of call events to observers."""

from __future__ import annotations

import logging
import time
from json.encoder import encode_basestring_ascii as _quote
from typing import Any, TextIO

from toolmesh.logs.lines import LineBuffer, invocations
from toolmesh.protocol.calls import Call


class InvocationLog(LineBuffer):
    """Executor observer that writes one JSON line per finished call, with the fields
    JsonFormatter would give it, through a LineBuffer."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.enabled = invocations.isEnabledFor(logging.INFO)

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        if not self.enabled:
            return
        self.add(
            f'{{"ts": {time.time():.6f}, "level": "info", "logger": "toolmesh.invocations", '
            f'"msg": "invocation", "request_id": {_quote(call.request_id)}, '
            f'"session_id": {_quote(call.session_id)}, '
            f'"function": {_quote(function or call.function[:128])}, '
            f'"outcome": "{outcome}", "duration_ms": {seconds * 1000:.3f}}}\n'
        )


class Observers:
    """Fans one executor event out to several observers."""

    def __init__(self, *observers: Any) -> None:
        self._observers = observers

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        for observer in self._observers:
            observer.finished(call, function, outcome, seconds)
