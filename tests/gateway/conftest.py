"""Real gateways for the gateway tests: uvicorn, the gRPC Mesh service and child runtime pods."""

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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, pod_env
from toolmesh.config import (
    ChatConfig,
    GatewayConfig,
    KeyConfig,
    McpConfig,
    MeshConfig,
    RouterConfig,
    RuntimeConfig,
    StateConfig,
)
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
async def gateway_factory() -> AsyncIterator[StartGateway]:
    """``await gateway_factory(runtime(...), keys=[...], max_body_bytes=2048)``; stopped after the test.

    `mcp`, `chat`, `router` and `state` set those sections; other keyword arguments go to [gateway].
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
        **settings: Any,
    ) -> Gateway:
        config = MeshConfig(
            gateway=GatewayConfig(http_port=0, grpc_port=0, **settings),
            runtimes=runtimes or (runtime(),),
            keys=tuple(keys),
            mcp=mcp or McpConfig(),
            chat=chat or ChatConfig(),
            # The router has its own tests (tests/router, tests/gateway/core/test_free_text.py).
            router=router or RouterConfig(enabled=False),
            state=state or StateConfig(),
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
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0),
        runtimes=runtimes or (runtime(),),
        router=router or RouterConfig(enabled=False),
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
            env={**pod_env(), "TMPDIR": str(marker), **(env or {})},
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
