"""What a function prints during a call: framed as log lines of that call, and bounded.

Without this, `print()` in a function went to the pod's stdout (the gateway's log)
unframed and unbounded: two calls could write 110 MB, with no way to tell which call
said what. In a running pod (`install`, done by serving.run), `sys.stdout` and
`sys.stderr` look up the call they are written from (a context variable the executor
sets for each call, and which worker threads inherit with the call's context), and each
line becomes a JSON log line carrying that call's `request_id` and `function`, and
`stream`. A call's first `PER_CALL_BYTES` are kept; past that its lines are counted, and
one "output truncated" line gives the count when the call ends.

Writes outside any call (module code, threads a function started on its own) go to the
real stdout and stderr, which output_pipe.py frames and bounds in turn, as it does for
writes to file descriptors 1 and 2 that bypass `sys.stdout` (C extensions, child
processes).
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TextIO, cast

#: Bytes of output kept per call; the rest is counted in one "output truncated" line.
PER_CALL_BYTES = 64 * 1024
#: A line is cut here (a program that never writes a newline still gets framed).
MAX_LINE_BYTES = 16 * 1024

output_log = logging.getLogger("toolmesh.output")
#: stderr lines log as warnings, stdout lines as info (a pod at "warning" keeps only stderr).
_LEVELS = {"stdout": logging.INFO, "stderr": logging.WARNING}

_current: ContextVar[CallOutput | None] = ContextVar("toolmesh_call_output", default=None)
_installed: list[tuple[TextIO, TextIO]] = []


def _cut(line: str, limit: int) -> tuple[str, int]:
    """`line` cut to at most `limit` UTF-8 bytes, and how many bytes were cut off."""
    data = line.encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return line, 0
    return data[:limit].decode("utf-8", "ignore"), len(data) - limit


class CallOutput:
    """One call's output: line-split per stream, logged, and bounded to PER_CALL_BYTES."""

    def __init__(self, request_id: str, function: str, budget: int = PER_CALL_BYTES) -> None:
        self.request_id = request_id
        self.function = function
        self.left = budget
        #: Bytes written past the budget.
        self.dropped = 0
        self._partial = {"stdout": "", "stderr": ""}
        # Re-entrant: a logging error inside an emit prints to sys.stderr, which lands here.
        self._lock = threading.RLock()

    def write(self, stream: str, text: str) -> None:
        with self._lock:
            *lines, rest = (self._partial[stream] + text).split("\n")
            if len(rest) > MAX_LINE_BYTES:
                lines.append(rest)
                rest = ""
            self._partial[stream] = rest
            for line in lines:
                self._emit(stream, line)

    def _emit(self, stream: str, line: str) -> None:
        if self.left <= 0:
            self.dropped += len(line.encode("utf-8", "surrogateescape")) + 1
            return
        kept, over = _cut(line, min(self.left, MAX_LINE_BYTES))
        self.dropped += over
        self.left -= len(kept.encode("utf-8", "surrogateescape")) + 1
        extra = {"request_id": self.request_id, "function": self.function, "stream": stream}
        output_log.log(_LEVELS[stream], kept, extra=extra)

    def finish(self) -> None:
        """Log what is left of unfinished lines, and how much was cut."""
        with self._lock:
            for stream, rest in self._partial.items():
                if rest:
                    self._partial[stream] = ""
                    self._emit(stream, rest)
            if self.dropped:
                output_log.warning(
                    f"output truncated: {self.dropped} bytes past the first {PER_CALL_BYTES} were dropped",
                    extra={
                        "request_id": self.request_id,
                        "function": self.function,
                        "truncated_bytes": self.dropped,
                    },
                )
                self.dropped = 0


class CallAwareStream(io.TextIOBase):
    """Stands in for sys.stdout or sys.stderr: a call's writes go to its CallOutput, the rest
    to the stream it replaced."""

    def __init__(self, name: str, fallback: TextIO) -> None:
        super().__init__()
        self.name = name
        self._fallback = fallback

    def write(self, text: str) -> int:
        output = _current.get()
        if output is None:
            written = self._fallback.write(text)
            if "\n" in text:
                self._fallback.flush()
            return written
        output.write(self.name, text)
        return len(text)

    def flush(self) -> None:
        self._fallback.flush()

    def fileno(self) -> int:
        return self._fallback.fileno()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._fallback.encoding


def install() -> None:
    """Make sys.stdout and sys.stderr call-aware (once per process; `uninstall` undoes it)."""
    if _installed:
        return
    _installed.append((sys.stdout, sys.stderr))
    sys.stdout = cast(TextIO, CallAwareStream("stdout", sys.stdout))
    sys.stderr = cast(TextIO, CallAwareStream("stderr", sys.stderr))


def uninstall() -> None:
    if _installed:
        sys.stdout, sys.stderr = _installed.pop()


@contextlib.contextmanager
def capturing(request_id: str, function: str) -> Iterator[None]:
    """Attribute what is printed in this context (and threads started with a copy of it) to
    one call. Does nothing where `install` was not called (a pod inside a test process)."""
    if not _installed:
        yield
        return
    output = CallOutput(request_id, function)
    token = _current.set(output)
    try:
        yield
    finally:
        _current.reset(token)
        output.finish()
