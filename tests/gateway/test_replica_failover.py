"""A gateway replica dies and callers barely notice: two `toolmesh up` gateways share a real
redis-server behind a real nginx that retries on the other upstream; clients call through it
while one gateway at a time is SIGKILLed and started again, in a loop (bench/replica_chaos.py,
shortened: the bench prints the full run's table). No pod outlives its gateway, every job ends
`succeeded` with none lost, and idempotent calls go on succeeding."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from bench.replica_chaos import print_report, run
from tests.conftest import require_tool

pytestmark = pytest.mark.slow

SECONDS = 17.0  # kills at 5, 10 and 15 s
CLIENTS = 4
KILL_EVERY = 5.0


def test_gateways_sigkilled_in_turn_behind_nginx_lose_no_job_and_leave_no_pod() -> None:
    nginx = require_tool("nginx", "apt-get install nginx-light")
    redis = require_tool("redis-server", "apt-get install redis-server")
    # Short: the pods' Unix sockets live under it, and a socket's path has room for 107 bytes.
    workdir = Path(tempfile.mkdtemp(prefix="tm-rf-"))
    try:
        summary = run(SECONDS, CLIENTS, KILL_EVERY, workdir, nginx, redis)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_report(summary, CLIENTS, KILL_EVERY)
    assert summary["kills"] >= 3, summary
    assert summary["orphan_pods"] == [], "pods outlived their gateway"
    assert summary["survivor_pods_lost"] == 0, "the other gateway's pool was disturbed"
    assert summary["jobs_submitted"] > 0 and summary["jobs_lost"] == 0, summary
    assert summary["jobs_succeeded"] == summary["jobs_submitted"], summary
    assert summary["idempotent_calls"] > 100 and summary["idempotent_ok_pct"] >= 99.0, summary
    # A keyed call that fails after its retries says so with an error code (never a hang).
    assert summary["keyed_calls"] > 100, summary
