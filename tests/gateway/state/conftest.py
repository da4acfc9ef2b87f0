"""A real `redis-server` on a free loopback port for the shared-state tests, killed after.

Skipped when redis-server is not installed, failed instead under TOOLMESH_REQUIRE_E2E=1 (CI).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool

INSTALL = "apt-get install redis-server"


#: Nothing written to disk: a killed server comes back empty, like a fresh one.
NO_DISK = ("--save", "", "--appendonly", "no")


class PortTaken(AssertionError):
    """The server could not have its port: another process bound it first."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process; `stop` kills it and `start` brings it back on the same port."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                *NO_DISK,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                raise PortTaken(f"redis-server exited with {code} (port {self.port} taken?)")
            try:
                if self._answering_pid() == self.process.pid:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise AssertionError(f"redis-server did not answer on port {self.port}")

    def _answering_pid(self) -> int | None:
        """The pid of the server answering on the port: a port picked free can be taken by another
        test's server before this one binds it, and that one answers PING just as well."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
            sock.sendall(b"INFO server\r\n")
            answer = b""
            while b"\r\n" not in answer.partition(b"process_id:")[2]:
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                answer += chunk
        return int(answer.split(b"process_id:", 1)[1].split(b"\r\n", 1)[0])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    binary = require_tool("redis-server", INSTALL)
    for attempt in range(3):
        server = RedisServer(binary, tmp_path)
        try:
            server.start()
            break
        except PortTaken:
            if attempt == 2:
                raise
    try:
        yield server
    finally:
        server.stop()
