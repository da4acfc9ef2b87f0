"""Real MCP servers over Streamable HTTP in subprocesses, for the `mcp_url` runtime tests: the
Python SDK's own (tests/fixtures/http_mcp_server.py) and the official npm `server-everything`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, missing, pod_env, require_tool

EVERYTHING = Path(__file__).resolve().parent / "everything"
EVERYTHING_MAIN = (
    EVERYTHING / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """A server on a fixed loopback port that a test can kill and start again."""

    def __init__(
        self, command: list[str], port: int, env: dict[str, str] | None = None, path: str = "/mcp"
    ) -> None:
        self.command = command
        self.port = port
        self.path = path
        self.env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self, timeout: float = 30) -> ServerProcess:
        self.process = subprocess.Popen(
            self.command, env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.command} exited with {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.command} did not listen on {self.port} within {timeout} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


def python_server(*flags: str) -> ServerProcess:
    """The SDK's MCPServer with the fixture tools (`--json`: JSON answers, `--stateless`; `--sse`:
    the deprecated HTTP+SSE transport, at /sse)."""
    port = free_port()
    command = [sys.executable, "-m", "tests.fixtures.http_mcp_server", str(port), *flags]
    path = "/sse" if "--sse" in flags else "/mcp"
    return ServerProcess(command, port, {"PYTHONPATH": pod_env()["PYTHONPATH"]}, path)


def everything_server(mode: str = "streamableHttp") -> ServerProcess:
    """server-everything over Streamable HTTP, or with `mode="sse"` over HTTP+SSE (at /sse)."""
    node = require_tool("node", "Node.js 20+")
    if not EVERYTHING_MAIN.is_file():
        missing(f"server-everything is not installed: npm ci --prefix {EVERYTHING.relative_to(ROOT)}")
    port = free_port()
    path = "/sse" if mode == "sse" else "/mcp"
    return ServerProcess([node, str(EVERYTHING_MAIN), mode], port, {"PORT": str(port)}, path)
