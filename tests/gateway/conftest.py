"""Real gateways for the gateway tests: uvicorn, the gRPC Mesh service and child runtime pods;
for jobs, a real callback receiver on loopback and a poll of a job."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, pod_env
from toolmesh.config import (
    ChatConfig,
    FunctionStateConfig,
    GatewayConfig,
    KeyConfig,
    McpConfig,
    MeshConfig,
    RouterConfig,
    RuntimeConfig,
    StateConfig,
)
from toolmesh.config.jobs_config import JobsConfig, TriggerConfig
from toolmesh.config.oauth_config import OAuthConfig
from toolmesh.directories import ProjectConfig
from toolmesh.gateway.server import Gateway, start_gateway


def runtime(name: str = "tools", *modules: str, **settings: Any) -> RuntimeConfig:
    """A runtime whose pod can import the test fixture modules."""
    return RuntimeConfig(
        name=name,
        modules=modules or ("sample_tools",),
        env={"PYTHONPATH": pod_env()["PYTHONPATH"]},
        **settings,
    )


StartGateway = Callable[..., Awaitable[Gateway]]


@pytest.fixture
async def gateway_factory(tmp_path: Path) -> AsyncIterator[StartGateway]:
    """``await gateway_factory(runtime(...), keys=[...], max_body_bytes=2048)``; stopped after the test.

    `mcp`, `chat`, `router`, `state`, `jobs`, `function_state`, `oauth` and `triggers` set those
    sections (jobs and function state in files under `tmp_path` unless they name one, and the
    project's data directory under it); other keyword arguments go to [gateway].
    """
    started: list[Gateway] = []

    async def start(
        *runtimes: RuntimeConfig,
        keys: Sequence[KeyConfig] = (),
        environ: dict[str, str] | None = None,
        mcp: McpConfig | None = None,
        chat: ChatConfig | None = None,
        router: RouterConfig | None = None,
        state: StateConfig | None = None,
        jobs: JobsConfig | None = None,
        function_state: FunctionStateConfig | None = None,
        oauth: OAuthConfig | None = None,
        triggers: Sequence[TriggerConfig] = (),
        **settings: Any,
    ) -> Gateway:
        config = MeshConfig(
            # start_grace: tests list right after start, on a machine loaded enough that a stdio
            # server may take more than the default's 5 s to list; those about it set their own.
            gateway=GatewayConfig(**{"http_port": 0, "grpc_port": 0, "start_grace": 60, **settings}),
            runtimes=runtimes or (runtime(),),
            keys=tuple(keys),
            mcp=mcp or McpConfig(),
            chat=chat or ChatConfig(),
            # The router has its own tests (tests/router, tests/gateway/core/test_free_text.py).
            router=router or RouterConfig(enabled=False),
            state=state or StateConfig(),
            jobs=jobs or JobsConfig(path=tmp_path / f"jobs-{len(started)}.sqlite3"),
            function_state=(function_state or FunctionStateConfig()).model_copy(
                update={
                    "path": (function_state and function_state.path)
                    or tmp_path / f"state-{len(started)}.sqlite3"
                }
            ),
            # Whatever a test leaves at its default is kept under tmp_path, not in the checkout.
            project=ProjectConfig(data_dir=tmp_path / f"data-{len(started)}"),
            oauth=oauth,
            triggers=tuple(triggers),
        )
        gateway = await start_gateway(config, environ=environ or {})
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


@contextlib.contextmanager
def gateway_in_thread(*runtimes: RuntimeConfig, router: RouterConfig | None = None) -> Iterator[Gateway]:
    """A real gateway on an event loop of its own, in a thread, for blocking clients (schemathesis,
    a sync gRPC channel under hypothesis) that would stall a gateway sharing the test's loop."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="gateway-loop", daemon=True)
    thread.start()
    jobs_dir = Path(tempfile.mkdtemp(prefix="tm-jobs-"))
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0),
        runtimes=runtimes or (runtime(),),
        router=router or RouterConfig(enabled=False),
        jobs=JobsConfig(path=jobs_dir / "jobs.sqlite3"),
        function_state=FunctionStateConfig(path=jobs_dir / "state.sqlite3"),
        project=ProjectConfig(data_dir=jobs_dir / "data"),
    )
    try:
        gateway = asyncio.run_coroutine_threadsafe(start_gateway(config, environ={}), loop).result(120)
        try:
            yield gateway
        finally:
            asyncio.run_coroutine_threadsafe(gateway.stop(grace=0), loop).result(60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        shutil.rmtree(jobs_dir, ignore_errors=True)


@dataclass
class Up:
    process: subprocess.Popen[str]
    http_port: int
    grpc_port: int
    marker: str

    def runtime_processes(self) -> list[int]:
        """Live processes whose command line names this gateway's temporary directory."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    argv = cmdline.read().decode(errors="replace")
                with open(f"/proc/{entry}/stat") as stat:
                    state = stat.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if self.marker in argv and state != "Z":
                found.append(int(entry))
        return found


StartUp = Callable[..., Up]


@pytest.fixture
def up(tmp_path: Path) -> Iterator[StartUp]:
    """Start `toolmesh up` serving sample_tools with one warm pod, plus `gateway` config lines
    and further `runtimes`; `file_limit` sets its RLIMIT_NOFILE (soft and hard); `env` adds to
    its environment."""
    started: list[Up] = []
    made: list[Path] = []

    def start(
        gateway: str = "",
        runtimes: str = "",
        file_limit: int | None = None,
        env: dict[str, str] | None = None,
    ) -> Up:
        # Short, not under tmp_path: a Unix socket's path has room for 107 bytes only.
        marker = Path(tempfile.mkdtemp(prefix="tm-"))
        made.append(marker)
        config = tmp_path / "toolmesh.toml"
        config.write_text(
            f"[gateway]\nhttp_port = 0\ngrpc_port = 0\n{gateway}\n"
            '[[runtimes]]\nname = "tools"\nmodules = ["sample_tools"]\nmin_replicas = 1\n' + runtimes
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # XDG_DATA_HOME: the jobs file (and sessions) of this gateway alone.
            env={**pod_env(), "TMPDIR": str(marker), "XDG_DATA_HOME": str(marker / "data"), **(env or {})},
            cwd=ROOT,
            preexec_fn=None if file_limit is None else lambda: _limit_files(file_limit),
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            _, err = process.communicate(timeout=30)
            raise AssertionError(f"toolmesh up exited: {err}")
        ready = json.loads(line)
        running = Up(process, ready["http_port"], ready["grpc_port"], str(marker))
        started.append(running)
        return running

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=10)
        for pid in running.runtime_processes():
            os.kill(pid, signal.SIGKILL)
    for directory in made:
        shutil.rmtree(directory, ignore_errors=True)


def _limit_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


@dataclass
class Delivery:
    body: bytes
    headers: dict[str, str]


@dataclass
class Receiver:
    url: str
    #: Statuses to answer, in order; once used up, 200.
    statuses: list[int] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    #: Every POST, including those answered with an error.
    attempts: int = 0

    async def wait_for(self, count: int, timeout: float = 15.0) -> list[Delivery]:
        """The deliveries answered 2xx, once there are `count` of them."""
        end = time.monotonic() + timeout
        while len(self.deliveries) < count:
            assert time.monotonic() < end, f"{len(self.deliveries)} callbacks arrived, expected {count}"
            await asyncio.sleep(0.02)
        return self.deliveries


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver("")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                found.attempts += 1
                status = found.statuses.pop(0) if found.statuses else 200
                if status < 300:
                    found.deliveries.append(Delivery(body, {k.lower(): v for k, v in self.headers.items()}))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield found
    server.shutdown()
    server.server_close()


async def wait_job(
    client: httpx.AsyncClient, job_id: str, done: Callable[[dict[str, Any]], bool], timeout: float = 20.0
) -> dict[str, Any]:
    """Poll GET /v1/jobs/{id} until `done(document)`."""
    end = time.monotonic() + timeout
    while True:
        response = await client.get(f"/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        if done(document):
            return document
        assert time.monotonic() < end, f"job still {document['status']}: {document}"
        await asyncio.sleep(0.05)


def finished(document: dict[str, Any]) -> bool:
    return document["status"] not in ("queued", "running")
