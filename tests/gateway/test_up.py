"""`toolmesh up` as a user runs it: config file, ready line, SIGTERM, no orphans, config errors,
`--module`, and the getting-started page's example (the README's too) from an empty directory."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, pod_env, user_dirs


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
            f"{url}/v1/functions/get_forecast/invoke",
            data=b'{"city": "Oslo", "days": 2}',
            method="POST",
            headers={"Content-Type": "application/json"},
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
        ("[jobs]\nworkers = 0\n", "jobs.workers: Input should be greater than or equal to 1"),
        (
            '[jobs]\ncallback_secret_env = "TOOLMESH_TEST_UNSET_SECRET"\n',
            "jobs: environment variable TOOLMESH_TEST_UNSET_SECRET is not set",
        ),
        (
            '[gateway]\nhttp_port = 0\ngrpc_port = 0\n[[runtimes]]\nname = "r"\nmodules = ["sample_tools"]\n'
            '[jobs]\npath = "/proc/self/nope/jobs.sqlite3"\n',
            "jobs: cannot write the jobs file /proc/self/nope/jobs.sqlite3",
        ),
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
    assert "runtime 'r' failed to load its modules: module 'nope_mod' not found" in done.stderr


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


# ---- `toolmesh up --module`, and configs run from elsewhere, as a user runs them ----

GETTING_STARTED = ROOT / "docs" / "getting-started.md"


def user_env(tmp_path: Path, router_cache: Path) -> dict[str, str]:
    """A user's shell: the venv's `toolmesh` on PATH, nothing of the checkout on PYTHONPATH, and
    the session's router model as the user's model cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return {**env, **user_dirs(tmp_path, router_cache)}


def empty_directory(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    assert not work.resolve().is_relative_to(ROOT)
    return work


def start_up(
    command: list[str], cwd: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[str], dict[str, int]]:
    """Start `toolmesh up` on free ports; return it and its ready line."""
    process = subprocess.Popen(
        [*command, "--http-port", "0", "--grpc-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        _, err = process.communicate(timeout=30)
        raise AssertionError(f"toolmesh up exited: {err}")
    return process, json.loads(line)


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    assert process.returncode == 0


def invoke(http_port: int, function: str, arguments: dict[str, object]) -> object:
    request = urllib.request.Request(
        f"http://127.0.0.1:{http_port}/v1/functions/{function}/invoke",
        data=json.dumps(arguments).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        result = json.loads(response.read())
    return result["structured"] if result["structured"] is not None else result["content"][0]["text"]


def fenced_blocks(page: Path) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of a page, in order (fence attributes left out)."""
    return re.findall(r"^```(\w*)[^\n]*\n(.*?)^```$", page.read_text(), flags=re.MULTILINE | re.DOTALL)


def commands(block: str) -> list[list[str]]:
    return [shlex.split(line[2:], comments=True) for line in block.splitlines() if line.startswith("$ ")]


@pytest.mark.slow
def test_the_getting_started_example_works_as_written(tmp_path: Path, router_cache: Path) -> None:
    """The getting-started page's example, from an empty directory outside the checkout, with the
    venv's `toolmesh` on PATH: only the ports are changed (to free ones) for the test. The README
    opens with the same function, serve and call blocks."""
    blocks = fenced_blocks(GETTING_STARTED)
    languages = [language for language, _ in blocks]
    tools = next(i for i, (language, text) in enumerate(blocks) if text.startswith("# my_tools.py"))
    serve = languages.index("console", tools)
    calls = languages.index("console", serve + 1)
    client = languages.index("python", calls)
    ((up, *up_args),) = commands(blocks[serve][1])
    assert [up, *up_args] == ["toolmesh", "up", "--module", "my_tools"]

    work = empty_directory(tmp_path)
    (work / "my_tools.py").write_text(blocks[tools][1])
    env = user_env(tmp_path, router_cache)
    assert shutil.which("toolmesh", path=env["PATH"]) == str(Path(sys.executable).parent / "toolmesh")
    process, ready = start_up([up, *up_args], work, env)
    try:
        url = f"http://127.0.0.1:{ready['http_port']}"
        outputs = []
        for command in commands(blocks[calls][1]):
            if command[:2] == ["toolmesh", "invoke"]:
                command += ["--url", url]
            done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            outputs.append(json.loads(done.stdout))
        invoked, schemas = outputs
        assert invoked["structured"] == {"city": "Paris", "days": [21.5, 21.5, 21.5]}
        assert [tool["function"]["name"] for tool in schemas] == ["get_forecast"]

        code = blocks[client][1]
        assert code.count("http://127.0.0.1:8080") == 1 and code.count('"127.0.0.1:50051"') == 1
        code = code.replace("http://127.0.0.1:8080", url)
        code = code.replace('"127.0.0.1:50051"', f'"127.0.0.1:{ready["grpc_port"]}"')
        done = subprocess.run(
            ["python", "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "{'city': 'Paris', 'days': [21.5, 21.5]}",
            "{'city': 'Oslo', 'days': [21.5, 21.5, 21.5]}",
        ]
    finally:
        stop(process)


@pytest.mark.slow
def test_up_serves_several_modules_as_one_runtime(tmp_path: Path, router_cache: Path) -> None:
    work = empty_directory(tmp_path)
    (work / "first_tools.py").write_text("def one() -> int:\n    return 1\n")
    (work / "second.py").write_text("def two() -> int:\n    return 2\n")
    env = user_env(tmp_path, router_cache)
    process, ready = start_up(["toolmesh", "up", "-m", "first_tools", "--module", "second"], work, env)
    try:
        assert invoke(ready["http_port"], "one", {}) == 1 and invoke(ready["http_port"], "two", {}) == 2
        with urllib.request.urlopen(f"http://127.0.0.1:{ready['http_port']}/readyz", timeout=10) as response:
            assert "first-tools" in json.loads(response.read())["runtimes"]
    finally:
        stop(process)


@pytest.mark.slow
def test_a_config_finds_its_modules_beside_it_from_any_directory(tmp_path: Path, router_cache: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "project_tools.py").write_text("def where() -> str:\n    return __file__\n")
    (project / "toolmesh.toml").write_text('[[runtimes]]\nname = "project"\nmodules = ["project_tools"]\n')
    env = user_env(tmp_path, router_cache)
    elsewhere = empty_directory(tmp_path)
    # From another directory, named...
    process, ready = start_up(["toolmesh", "up", "--config", "../project/toolmesh.toml"], elsewhere, env)
    try:
        assert invoke(ready["http_port"], "where", {}) == str(project / "project_tools.py")
    finally:
        stop(process)
    # ... and found in the current directory when no --config is given.
    process, ready = start_up(["toolmesh", "up"], project, env)
    try:
        assert invoke(ready["http_port"], "where", {}) == str(project / "project_tools.py")
    finally:
        stop(process)


def test_module_and_config_together_are_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolmesh", "up", "--module", "m", "--config", "toolmesh.toml"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        == "toolmesh up: give --module or --config, not both (a config lists its runtimes' modules)"
    )
