"""File descriptors 1 and 2 of a pod, read by a thread that frames and bounds every line.

`print()` during a call is framed per call (call_output.py); this catches the rest: output
outside any call, and writes that never pass through `sys.stdout` (a C extension, a
child process a function started with inherited descriptors). Each line becomes a JSON
log line (logger "toolmesh.output", `stream` stdout or stderr), cut at `MAX_LINE_BYTES`;
past `BYTES_PER_SECOND` in a second, lines are dropped and counted, and one line says how
many bytes were dropped when the next second starts (or when the pod stops).

The pod's own logs keep the original stderr (a duplicate of it, `log_stream`), so they are
never framed twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import sys
import threading
import time
from typing import TextIO

from toolmesh.logs import lines as logs
from toolmesh.runtimes.pod.isolation.call_output import MAX_LINE_BYTES, output_log

#: Output outside calls kept per second; past it lines are dropped (and counted).
BYTES_PER_SECOND = 64 * 1024
#: How long `close` waits for the last lines (a child process may still hold the pipe).
CLOSE_WAIT = 1.0
_STREAMS = {1: "stdout", 2: "stderr"}
_LEVELS = {"stdout": logging.INFO, "stderr": logging.WARNING}


class _Budget:
    """Bytes per one-second window; counts what it refuses."""

    def __init__(self, per_second: int) -> None:
        self.per_second = per_second
        self.window = 0.0
        self.left = per_second
        self.dropped = 0

    def take(self, size: int, now: float) -> bool:
        if now - self.window >= 1.0:
            self.report()
            self.window, self.left = now, self.per_second
        if size > self.left:
            self.dropped += size
            return False
        self.left -= size
        return True

    def report(self) -> None:
        if self.dropped:
            output_log.warning(
                f"output dropped: {self.dropped} bytes over {self.per_second} bytes/s",
                extra={"dropped_bytes": self.dropped},
            )
            self.dropped = 0


class OutputPipe:
    """Descriptors 1 and 2 turned into pipes that a daemon thread frames; `close` undoes it."""

    def __init__(self, saved: dict[int, int], readers: dict[int, str], log_stream: TextIO) -> None:
        self._saved = saved
        self._readers = readers
        #: Where the pod's own log lines (and the framed output) go: the original stderr.
        self.log_stream = log_stream
        self._budget = _Budget(BYTES_PER_SECOND)
        self._thread = threading.Thread(target=self._pump, name="toolmesh-output", daemon=True)
        self._thread.start()

    @classmethod
    def install(cls) -> OutputPipe:
        """Redirect this process's descriptors 1 and 2; the logs keep writing to the old stderr."""
        log_stream = os.fdopen(
            os.dup(2), "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=True
        )
        logs.use_stream(log_stream)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        saved: dict[int, int] = {}
        readers: dict[int, str] = {}
        for fd, name in _STREAMS.items():
            saved[fd] = os.dup(fd)
            read, write = os.pipe()
            os.dup2(write, fd)  # 1 and 2 stay inheritable: children write into the pipe too
            os.close(write)
            readers[read] = name
        return cls(saved, readers, log_stream)

    def _pump(self) -> None:
        pending = dict.fromkeys(self._readers, b"")
        open_fds = list(self._readers)
        while open_fds:
            try:
                readable, _, _ = select.select(open_fds, [], [])
            except InterruptedError:
                continue
            for fd in readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.remove(fd)
                    if pending[fd]:
                        self._line(self._readers[fd], pending[fd])
                    continue
                *lines, rest = (pending[fd] + chunk).split(b"\n")
                if len(rest) > MAX_LINE_BYTES:
                    lines.append(rest)
                    rest = b""
                pending[fd] = rest
                for line in lines:
                    self._line(self._readers[fd], line)
        self._budget.report()

    def _line(self, stream: str, line: bytes) -> None:
        cut = max(len(line) - MAX_LINE_BYTES, 0)
        if not self._budget.take(len(line) - cut + 1, time.monotonic()):
            return
        extra: dict[str, object] = {"stream": stream}
        if cut:
            extra["truncated_bytes"] = cut
        text = line[:MAX_LINE_BYTES].decode("utf-8", "replace")
        output_log.log(_LEVELS[stream], text, extra=extra)

    def close(self) -> None:
        """Give descriptors 1 and 2 back, and wait (briefly) for the last lines to be logged."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        for fd, original in self._saved.items():
            os.dup2(original, fd)
            os.close(original)
        self._thread.join(CLOSE_WAIT)
        logs.use_stream(sys.stderr)
        with contextlib.suppress(OSError):
            self.log_stream.flush()
