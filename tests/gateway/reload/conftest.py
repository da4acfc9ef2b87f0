"""`toolmesh up` serving a module in a temporary directory that the tests edit."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import TESTS, pod_env

FIXTURE = TESTS / "fixtures" / "reload_tools.py"
NEW_FUNCTION = '''

def celsius_to_fahrenheit(celsius: float) -> float:
    """Convert a temperature in degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 + 32
'''


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    module: Path
    #: Its log (stderr), in a file: a pipe nobody reads fills up under load and stalls the pods.
    log: Path

    def edit(self, old: str, new: str) -> None:
        text = self.module.read_text()
        assert old in text
        self.module.write_text(text.replace(old, new))

    def stop(self) -> str:
        """SIGTERM; its log once it exited."""
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=60)
        assert self.process.returncode == 0, self.log.read_text()[-3000:]
        return self.log.read_text()


def serve_module(tmp_path: Path, *args: str, env: dict[str, str] | None = None, config: str = "") -> Served:
    """`toolmesh up ARGS` on free ports, serving a copy of reload_tools.py as `tmp_path/work/live_tools.py`
    (one warm pod), with `config` added to its toolmesh.toml."""
    work = tmp_path / "work"
    work.mkdir()
    module = work / "live_tools.py"
    shutil.copy(FIXTURE, module)
    toml = work / "toolmesh.toml"
    toml.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n"
        '[[runtimes]]\nname = "tools"\nmodules = ["live_tools"]\nmin_replicas = 1\n' + config
    )
    log = tmp_path / "gateway.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolmesh", "up", "--config", str(toml), *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=work,
            env={**pod_env(), **(env or {})},
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.communicate(timeout=30)
        raise AssertionError(f"toolmesh up exited: {log.read_text()}")
    return Served(process, f"http://127.0.0.1:{json.loads(line)['http_port']}", module, log)


@pytest.fixture
def served() -> Iterator[list[Served]]:
    """Gateways a test started, killed if the test left them running."""
    started: list[Served] = []
    yield started
    for gateway in started:
        if gateway.process.poll() is None:
            gateway.process.kill()
            gateway.process.communicate(timeout=30)
