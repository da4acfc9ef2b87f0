"""`toolmesh` commands a newcomer trips on first: one clear line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import pod_env


def toolmesh(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolmesh", *args]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=60, env=pod_env(), cwd=cwd
    )


def test_hash_key_reads_a_pipe_and_refuses_nothing_in_one_line() -> None:
    piped = toolmesh("hash-key", stdin="s3cret\n")
    assert piped.returncode == 0 and piped.stdout == toolmesh("hash-key", "s3cret").stdout
    assert piped.stdout.startswith("sha256:") and not piped.stderr
    empty = toolmesh("hash-key")
    assert empty.returncode == 2 and "Traceback" not in empty.stderr
    assert empty.stderr.strip().splitlines() == [
        "toolmesh hash-key: no key given: pass it as an argument, pipe it or type it"
    ]


def test_a_module_given_as_a_file_name_suggests_its_import_name(tmp_path: Path) -> None:
    (tmp_path / "inventory.py").write_text("def count() -> int:\n    return 1\n")
    found = toolmesh("functions", "--module", "inventory.py", cwd=tmp_path)
    assert found.returncode != 0 and "Traceback" not in found.stderr
    assert "give the module's import name, 'inventory'" in found.stderr
    assert toolmesh("functions", "--module", "inventory", cwd=tmp_path).returncode == 0


def test_up_on_a_terminal_prints_a_banner_and_readable_lines(tmp_path: Path) -> None:
    """`script` gives `toolmesh up` a terminal; the same command on a pipe keeps JSON lines."""
    (tmp_path / "hello.py").write_text(
        "def hello(name: str) -> str:\n    '''Say hello.'''\n    return 'hi ' + name\n"
    )
    typescript = tmp_path / "typescript"
    up = f"{sys.executable} -m toolmesh up --module hello --http-port 0 --grpc-port 0"
    env = {**pod_env(), "PYTHONPATH": f"{tmp_path}:{pod_env()['PYTHONPATH']}"}
    terminal = subprocess.Popen(
        ["script", "-qfc", up, str(typescript)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while "Ctrl-C stops it." not in (seen := typescript.read_text() if typescript.exists() else ""):
            assert time.monotonic() < deadline and terminal.poll() is None, seen
            time.sleep(0.1)
    finally:
        terminal.kill()
        terminal.wait(10)
        assert terminal.stdin is not None
        terminal.stdin.close()
        subprocess.run(["pkill", "-f", "toolmesh up --module hello --http-port 0"], check=False)
    assert "toolmesh is up, serving 1 function: hello" in seen
    assert "/ui/" in seen and "/mcp" in seen and "gRPC" in seen
    assert " INFO    gateway: gateway serving" in seen and '{"ts"' not in seen
