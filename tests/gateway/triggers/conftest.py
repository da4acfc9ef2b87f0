"""The triggers' tests use the shared-state tests' redis-server, a real `nats-server -js` and a
real PostgreSQL 15 (initdb and pg_ctl as the `postgres` user), each on a free loopback port.

Skipped when a server is not installed (or the PostgreSQL one cannot run as `postgres`), failed
instead under TOOLMESH_REQUIRE_E2E=1 (CI).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_E2E, missing, require_tool
from tests.gateway.reload.conftest import served
from tests.gateway.state.conftest import free_port, redis_server

__all__ = ["nats_server", "postgres_server", "redis_server", "served"]

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")

#: Without the `triggers` extra (an environment made before it existed) these modules are not
#: collected, rather than failing to import; under TOOLMESH_REQUIRE_E2E=1 they fail instead.
collect_ignore = [
    module
    for module, package in (("test_nats_jetstream.py", "nats"), ("test_postgres_notify.py", "asyncpg"))
    if importlib.util.find_spec(package) is None and not REQUIRE_E2E
]


def wait_port(port: int, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"{what} did not answer on port {port}")


class NatsServer:
    """One `nats-server -js` process storing under `directory`; `kill` and `start` again keep
    its streams (they are on disk)."""

    def __init__(self, binary: str, directory: Path) -> None:
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "-js", "-sd", str(self.directory), "-a", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, "nats-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(require_tool("nats-server", "apt-get install nats-server"), tmp_path / "nats")
    server.start()
    try:
        yield server
    finally:
        server.stop()


class PostgresServer:
    """A PostgreSQL 15 cluster in a temporary directory owned by `postgres`, on loopback."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *command],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def start(self) -> None:
        data = self.directory / "data"
        self._as_postgres(str(POSTGRES_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-w", "start")
        wait_port(self.port, "postgres")

    def stop(self) -> None:
        data = self.directory / "data"
        subprocess.run(
            [
                "runuser",
                "-u",
                "postgres",
                "--",
                str(POSTGRES_BIN / "pg_ctl"),
                "-D",
                str(data),
                "-m",
                "immediate",
                "stop",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )


@pytest.fixture
def postgres_server() -> Iterator[PostgresServer]:
    if not (POSTGRES_BIN / "initdb").exists():
        missing("PostgreSQL 15 is not installed (apt-get install postgresql-15)")
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        missing("there is no postgres user to run PostgreSQL as")
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        missing("PostgreSQL's tests start it as the postgres user, which needs root and runuser")
    # Not under pytest's tmp_path: the postgres user must be able to reach it.
    directory = Path(tempfile.mkdtemp(prefix="tm-pg-"))
    os.chown(directory, user.pw_uid, user.pw_gid)
    server = PostgresServer(directory)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
