"""Jobs survive their gateway: `toolmesh up` killed mid-job, started again on the same file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartUp

REPLICA_TOOLS = '\n[[runtimes]]\nname = "replica"\nmodules = ["replica_tools"]\nmin_replicas = 1\n'


def _wait(http: httpx.Client, job_id: str, statuses: set[str], timeout: float = 30.0) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        document: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
        if document["status"] in statuses:
            return document
        assert time.monotonic() < end, document
        time.sleep(0.05)


@pytest.mark.slow
def test_an_idempotent_job_running_when_its_gateway_is_killed_runs_again_after_restart(
    up: StartUp, tmp_path: Path
) -> None:
    # A short lease, so that the restarted gateway takes the job back within a second.
    # `nap` is idempotent: only such a job runs again (test_killed_gateway_jobs.py: the others).
    jobs = f'\n[jobs]\npath = "{tmp_path / "jobs.sqlite3"}"\nlease = 1.0\n' + REPLICA_TOOLS
    first = up(runtimes=jobs)
    with httpx.Client(base_url=f"http://127.0.0.1:{first.http_port}", timeout=10) as http:
        submitted = http.post(
            "/v1/functions/nap/invoke", json={"seconds": 2.0}, headers={"Prefer": "respond-async"}
        )
        assert submitted.status_code == 202
        job_id = submitted.json()["id"]
        assert _wait(http, job_id, {"running"})["attempts"] == 1
    first.process.kill()
    first.process.communicate(timeout=10)

    second = up(runtimes=jobs)
    with httpx.Client(base_url=f"http://127.0.0.1:{second.http_port}", timeout=10) as http:
        done = _wait(http, job_id, {"succeeded", "failed", "dead"})
        assert done["status"] == "succeeded" and done["attempts"] == 2, done
        assert done["result"]["content"] == [{"type": "text", "text": "rested"}]
