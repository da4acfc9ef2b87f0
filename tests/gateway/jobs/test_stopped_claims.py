"""A gateway that stops leaves none of its jobs running under a lease: those it ran are settled
(cut-off idempotent ones queued again), and a batch claim on its way as it stops is given back
to the queue at once. Stopped at a different moment of a burst, round after round; the next
gateway on the file then runs every job."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import StartGateway, finished, runtime, wait_job
from tests.gateway.jobs.conftest import make_job
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import StateConfig
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.gateway.jobs.job import JobStatus
from toolmesh.gateway.jobs.redis_jobs import RedisJobStore
from toolmesh.gateway.state.redis_client import Outage, connect

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


async def test_a_claim_on_its_way_as_the_gateway_stops_is_given_back_round_after_round(
    gateway_factory: StartGateway, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Redis is paused while the gateway's poll claims, the gateway is told to stop, then Redis
    goes on: the jobs that claim took are queued again at once, their attempt given back."""
    assert redis_server.process is not None
    pid = redis_server.process.pid
    state = StateConfig(url=redis_server.url, timeout=10.0)
    client = connect(redis_server.url, 5.0)
    for round_ in range(ROUNDS):
        gateway = await gateway_factory(
            runtime("replica", "replica_tools"), state=state, jobs=JobsConfig(workers=4, lease=60.0)
        )
        mine = gateway.jobs.store if gateway.jobs else None
        assert isinstance(mine, RedisJobStore)
        # The test's own client on the gateway's keys: the gateway's closes as it stops.
        store = RedisJobStore(
            client,
            mine.prefix.removesuffix(f"jobs:{mine.project}:"),
            Outage(redis_server.url),
            3600,
            5,
            mine.project,
        )
        (nap,) = [name for name in gateway.mesh.catalog.names() if name.endswith("nap")]
        # Its poll finds a job nothing woke it for (the control: this gateway claims and runs it).
        control = make_job(function=nap)
        control.arguments = b"{}"
        await store.add(control, 100)
        for _ in range(100):
            ran = await store.get(control.id)
            if ran is not None and ran.status is JobStatus.SUCCEEDED:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"the gateway never ran {ran}")
        jobs = [make_job(function=nap) for _ in range(3)]
        for job in jobs:
            job.arguments = b'{"seconds": 30}'
            await store.add(job, 100)
        # Nothing wakes the runner: its next poll (within POLL) claims them, into a paused Redis.
        os.kill(pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(0.8)
            stopping = asyncio.create_task(gateway.stop(grace=0.1))
            await asyncio.sleep(0.3)
        finally:
            os.kill(pid, signal.SIGCONT)
        await stopping
        for job in jobs:
            stored = await store.get(job.id)
            assert stored is not None, job.id
            assert stored.status is JobStatus.QUEUED and stored.attempts == 0, (round_, stored)
            await store.cancel(job.id, job.owner, (JobStatus.QUEUED,))
    await client.aclose()
