"""Shared fixtures: real runtime pods, in-process or as child processes, on free ports."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import grpc
import pytest

from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.pod.serving import Pod
from toolmesh.runtimes.pod.settings import PodSettings
from toolmesh.v1 import runtime_pb2_grpc

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
ROOT = TESTS.parent
#: Set by .ci/run: a test that needs a tool fails when it is missing, instead of skipping.
REQUIRE_E2E = os.environ.get("TOOLMESH_REQUIRE_E2E") == "1"


def missing(reason: str) -> NoReturn:
    """Skip a test whose tool is not installed, or fail it under TOOLMESH_REQUIRE_E2E=1."""
    if REQUIRE_E2E:
        pytest.fail(f"{reason}, and TOOLMESH_REQUIRE_E2E=1 says it must run")
    pytest.skip(reason)


def require_tool(name: str, install: str = "") -> str:
    """The path of a command-line tool the test needs (see `missing`)."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not installed{f' ({install})' if install else ''}")
    return path


@pytest.fixture(autouse=True)
def _fixture_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test modules under tests/fixtures and examples/ import like user modules."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.syspath_prepend(str(ROOT))


@dataclass
class InProcessPod:
    pod: Pod
    channel: grpc.aio.Channel
    stub: runtime_pb2_grpc.RuntimeStub

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.pod.port}"


@pytest.fixture
async def pod_factory() -> AsyncIterator[Callable[..., object]]:
    """Start real grpc.aio pods in this test's event loop: ``await pod_factory("sample_tools")``."""
    started: list[InProcessPod] = []

    async def start(*modules: str, metrics: bool = True, **settings: object) -> InProcessPod:
        pod_settings = PodSettings(
            modules=modules or ("sample_tools",),
            port=0,
            metrics_port=0 if metrics else None,
            drain_grace=1.0,
            **settings,  # type: ignore[arg-type]
        )
        pod = Pod(pod_settings, Registry.from_modules(pod_settings.modules))
        await pod.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{pod.port}")
        running = InProcessPod(pod, channel, runtime_pb2_grpc.RuntimeStub(channel))
        started.append(running)
        return running

    yield start
    for running in started:
        await running.channel.close()
        await running.pod.stop(grace=0)


@pytest.fixture
async def pod(pod_factory: Callable[..., object]) -> InProcessPod:
    """A pod serving tests/fixtures/sample_tools.py."""
    return await pod_factory()  # type: ignore[no-any-return, misc]


@dataclass
class PodProcess:
    """A `toolmesh runtime` child process and the ports from its ready line."""

    process: subprocess.Popen[str]
    port: int
    metrics_port: int | None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def terminate(self, timeout: float = 15) -> tuple[int, str]:
        """SIGTERM, wait, and return (exit status, stderr)."""
        self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float = 15) -> tuple[int, str]:
        """Wait for the process to exit and return (exit status, stderr)."""
        _, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, err


def pod_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FIXTURES), str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def pod_process() -> Iterator[Callable[..., PodProcess]]:
    """Start `toolmesh runtime` as a real child process: ``pod_process("sample_tools", "--debug")``."""
    started: list[PodProcess] = []

    def start(*modules: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> PodProcess:
        command = [sys.executable, "-m", "toolmesh", "runtime", "--port", "0", "--metrics-port", "0"]
        for module in modules or ("sample_tools",):
            command += ["--module", module]
        process = subprocess.Popen(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**pod_env(), **(env or {})},
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            _, err = process.communicate(timeout=10)
            raise AssertionError(f"pod exited before it was ready: {err}")
        ready = json.loads(line)
        running = PodProcess(process, ready["grpc_port"], ready["metrics_port"])
        started.append(running)
        return running

    yield start
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=10)


@pytest.fixture(scope="session")
def router_build_log() -> list[str]:
    """The progress lines of the session's one model build."""
    return []


@pytest.fixture(scope="session")
def router_cache(tmp_path_factory: pytest.TempPathFactory, router_build_log: list[str]) -> Path:
    """A model cache holding the default router model, built once per test session from the package.

    Every router test (and every gateway started with the router) shares it, so the
    suite builds the ONNX model exactly once.
    """
    from toolmesh.router.embedding.model import ensure_model

    cache = tmp_path_factory.mktemp("router-cache")
    ensure_model(cache, progress=router_build_log.append)
    return cache


def user_dirs(tmp_path: Path, router_cache: Path) -> dict[str, str]:
    """XDG variables for a `toolmesh up` child process: the session's built router model as its
    model cache (so it builds none), and its sessions in `tmp_path`, not the user's home."""
    cache = tmp_path / "xdg-cache"
    cache.mkdir()
    (cache / "toolmesh").symlink_to(router_cache)
    return {"XDG_CACHE_HOME": str(cache), "XDG_DATA_HOME": str(tmp_path / "xdg-data")}
