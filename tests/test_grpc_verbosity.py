"""GRPC_VERBOSITY defaults to ERROR in processes that import toolmesh, unless the user set it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _verbosity_seen_by_grpc_users(environ: dict[str, str]) -> str:
    script = "import os, toolmesh, grpc; print(os.environ.get('GRPC_VERBOSITY', ''))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environ, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_toolmesh_quiets_grpc_before_grpc_loads() -> None:
    environ = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    assert _verbosity_seen_by_grpc_users(environ) == "ERROR"


@pytest.mark.parametrize("mine", ["DEBUG", "INFO"])
def test_a_users_own_grpc_verbosity_wins(mine: str) -> None:
    assert _verbosity_seen_by_grpc_users({**os.environ, "GRPC_VERBOSITY": mine}) == mine
