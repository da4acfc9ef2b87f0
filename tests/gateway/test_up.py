"""`toolmesh up` as a user runs it: config file, ready line, SIGTERM, no orphans, config errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, pod_env


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def toolmesh_up(tmp_path: Path, runtimes: str, stderr: int = subprocess.PIPE) -> subprocess.Popen[str]:
    """`toolmesh up` on free ports with these [[runtimes]], as a user starts it."""
    config = tmp_path / "toolmesh.toml"
    config.write_text("[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n" + runtimes)
    return subprocess.Popen(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=pod_env(),
        cwd=ROOT,
    )


@pytest.mark.slow
def test_up_serves_the_config_and_stops_its_pods(tmp_path: Path) -> None:
    process = toolmesh_up(
        tmp_path,
        '[[runtimes]]\nname = "tools"\nmodules = ["sample_tools"]\n'
        '[[runtimes]]\nname = "weather"\nmodules = ["examples.weather"]\n',
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        url = f"http://127.0.0.1:{ready['http_port']}"
        request = urllib.request.Request(
            f"{url}/v1/functions/get_forecast/invoke", data=b'{"city": "Oslo", "days": 2}', method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert len(json.loads(response.read())["structured"]["days"]) == 2
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0
    logs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    templates = [line["pid"] for line in logs if line.get("msg") == "template started"]
    pods = [line["pid"] for line in logs if line.get("msg") == "pod ready"]
    assert len(templates) == 2
    assert len(pods) == 1, "only the runtime that was called started a pod"
    pods += templates
    time.sleep(0.1)
    assert not [pid for pid in pods if alive(pid)], "every pod stopped with the gateway"
    assert any("no API keys configured" in line.get("msg", "") for line in logs)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[gateway]\nhttp_port = 99999\n", "gateway.http_port: Input should be less than or equal to 65535"),
        (
            '[[runtimes]]\nname = "Bad Name"\nmodules = ["x"]\n',
            "runtimes.0: name 'Bad Name' must be lowercase",
        ),
        ('[[runtimes]]\nname = "r"\n', "runtimes.0: give `modules`"),
        (
            '[[runtimes]]\nname = "r"\nmodules = ["x"]\nmin_replicas = 3\nmax_replicas = 2\n',
            "runtimes.0: min_replicas (3) exceeds max_replicas (2)",
        ),
        (
            '[[runtimes]]\nname = "r"\nmodules = ["x"]\ncatalog = "c.json"\n',
            "runtimes.0: `catalog` goes with `address` alone",
        ),
        (
            '[[runtimes]]\nname = "r"\nmodules = ["x"]\ntransport = "smoke"\n',
            "runtimes.0.transport: Input should be",
        ),
        ('[[keys]]\nname = "k"\nkey_hash = "md5:abc"\n', "keys.0: key_hash must look like 'sha256:"),
        ('[[keys]]\nname = "k"\n', "keys.0: give exactly one of"),
        ("[gateway]\nport = 1\n", "gateway.port: Extra inputs are not permitted"),
        ("[gateway\n", "not valid TOML"),
    ],
)
def test_a_bad_config_fails_start_up_naming_the_key(tmp_path: Path, toml: str, message: str) -> None:
    config = tmp_path / "toolmesh.toml"
    config.write_text(toml)
    done = subprocess.run(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        env=pod_env(),
    )
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_runtime_that_cannot_start_fails_start_up(tmp_path: Path) -> None:
    config = tmp_path / "toolmesh.toml"
    config.write_text(
        '[gateway]\nhttp_port = 0\ngrpc_port = 0\n[[runtimes]]\nname = "r"\nmodules = ["nope_mod"]\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=pod_env(),
    )
    assert done.returncode == 2
    assert "runtime 'r' exited with status 2 while loading its modules" in done.stderr
    assert "module 'nope_mod' not found" in done.stderr


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.mark.slow
def test_a_gateway_killed_outright_leaves_no_orphans(tmp_path: Path) -> None:
    process = toolmesh_up(
        tmp_path,
        '[[runtimes]]\nname = "tools"\nmodules = ["sample_tools"]\nmin_replicas = 2\n',
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    json.loads(process.stdout.readline())
    below = descendants(process.pid)
    assert len(below) == 3, "a template and two pods"
    process.kill()
    process.communicate(timeout=10)
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in below if alive(pid)], "SIGKILL'd gateway: its template and pods exit too"
