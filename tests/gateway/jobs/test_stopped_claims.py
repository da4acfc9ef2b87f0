"""A gateway that stops leaves none of its jobs running under a lease: those it ran are settled
(cut-off idempotent ones queued again), and a batch claim on its way as it stops is given back
to the queue at once. Stopped at a different moment of a burst, round after round; the next
gateway on the file then runs every job."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import StartGateway, finished, runtime, wait_job
from toolmesh.jobs_config import JobsConfig

pytestmark = pytest.mark.slow

ASYNC = {"Prefer": "respond-async"}
ROUNDS = 4
JOBS = 40


def _running(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()[0])


async def test_a_stopped_gateway_leaves_no_job_leased_round_after_round(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    path = tmp_path / "shared.sqlite3"
    # A long lease: a job left running would hold up the next gateway far past this test's wait.
    jobs = JobsConfig(path=path, workers=4, lease=60.0)
    for round_ in range(ROUNDS):
        first = await gateway_factory(runtime("replica", "replica_tools", max_inflight=8), jobs=jobs)
        async with httpx.AsyncClient(base_url=first.url, timeout=10) as http:
            submitted = [
                (await http.post("/v1/functions/nap/invoke", json={"seconds": 0.02}, headers=ASYNC)).json()[
                    "id"
                ]
                for _ in range(JOBS)
            ]
        await asyncio.sleep(0.05 * round_)  # stopped at another moment of the burst each round
        await first.stop(grace=0.05)
        assert _running(path) == 0, round_
        second = await gateway_factory(runtime("replica", "replica_tools"), jobs=jobs)
        async with httpx.AsyncClient(base_url=second.url, timeout=10) as http:
            ends = await asyncio.gather(*(wait_job(http, job_id, finished) for job_id in submitted))
        assert all(job["status"] == "succeeded" for job in ends), (round_, ends)
        await second.stop(grace=1.0)
