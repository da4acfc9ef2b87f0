"""A pod's liveness, answered by a thread of its own on a Unix socket, not by its event loop.

A pod whose event loop is blocked by a call (loop_watchdog.py) is alive: it must not be
taken for a frozen one and killed, with every other call on it. So the gateway's liveness
pings (gateway/pool/liveness.py) go to this socket, where a thread answers each byte it
reads with one JSON line, a `LoopReport`: empty while the loop runs; while it is stalled,
for how long and by which call; once condemned, the calls the pod had started. A pod that
is frozen as a whole (SIGSTOP, a C call that holds the GIL) answers nothing here either,
and is found as before.

    gateway -> pod   b"?"              (any byte: one answer per byte)
    pod -> gateway   {"blocked": 2.5, "function": "tools.blocker", "request_id": "...",
                      "timeout": 30, "where": "tools.py:9 in blocker", "condemned": false,
                      "started": []}\\n   ({} while the loop runs)
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable

from toolmesh.protocol.loop_report import LoopReport


class LivenessSocket:
    """Answers liveness pings on a Unix socket from threads, whatever the event loop does."""

    def __init__(self, path: str, report: Callable[[], LoopReport]) -> None:
        self.path = path
        self._report = report
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)  # the directory keeps others out; the socket says so too
        listener.listen(8)
        self._listener = listener
        threading.Thread(target=self._accept, name="toolmesh-liveness", daemon=True).start()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                self._connections.add(connection)
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with contextlib.suppress(OSError), connection:
            while asked := connection.recv(64):
                for _ in asked:
                    connection.sendall(self._report().encode())
        with self._lock:
            self._connections.discard(connection)

    def close(self) -> None:
        if self._listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone would not.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
