"""GRPC_VERBOSITY defaults to ERROR in the processes the `toolmesh` command runs, unless the user
set it; a program that only imports toolmesh keeps its environment (tests/test_public_api.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

#: Runs the `toolmesh` command's entry (`--help` is enough: the default is set before parsing),
#: then loads grpc as a command would, and prints what grpc's C core sees.
SCRIPT = """
import contextlib, os, sys
import toolmesh.cli
assert "grpc" not in sys.modules, "grpc loaded before the command could quiet it"
with contextlib.redirect_stdout(open(os.devnull, "w")), contextlib.suppress(SystemExit):
    toolmesh.cli.main(["--help"])
import grpc
print(os.environ.get("GRPC_VERBOSITY", ""))
"""


def _verbosity_seen_by_grpc_users(environ: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environ, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_toolmesh_command_quiets_grpc_before_grpc_loads() -> None:
    environ = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    assert _verbosity_seen_by_grpc_users(environ) == "ERROR"


@pytest.mark.parametrize("mine", ["DEBUG", "INFO"])
def test_a_users_own_grpc_verbosity_wins(mine: str) -> None:
    assert _verbosity_seen_by_grpc_users({**os.environ, "GRPC_VERBOSITY": mine}) == mine
