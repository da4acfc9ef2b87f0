"""`toolmesh` commands a newcomer trips on first: one clear line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
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
