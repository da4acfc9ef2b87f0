"""A drain that has to cut jobs off (their calls outlive the grace) ends each by what may be
repeated: an idempotent one is queued again, and the next gateway on the file runs it; another
ends failed, `outcome_unknown`, and never runs again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.gateway.conftest import StartGateway, finished, runtime, wait_job
from toolmesh.config.jobs_config import JobsConfig

ASYNC = {"Prefer": "respond-async"}
EACH = 3


async def test_jobs_cut_off_by_a_drain_run_again_only_when_idempotent(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    jobs = JobsConfig(path=tmp_path / "shared.sqlite3", workers=2 * EACH, lease=1.0)
    first = await gateway_factory(runtime("replica", "replica_tools", max_inflight=2 * EACH), jobs=jobs)
    async with httpx.AsyncClient(base_url=first.url, timeout=10) as http:
        submitted = {
            name: [
                (
                    await http.post(f"/v1/functions/{name}/invoke", json={"seconds": 3.0}, headers=ASYNC)
                ).json()["id"]
                for _ in range(EACH)
            ]
            for name in ("nap", "nap_once")
        }
        for ids in submitted.values():
            for job_id in ids:
                await wait_job(http, job_id, lambda job: job["status"] == "running")
    await first.stop(grace=0.2)
    # The next gateway on the same file finds what the drain left.
    second = await gateway_factory(runtime("replica", "replica_tools"), jobs=jobs)
    async with httpx.AsyncClient(base_url=second.url, timeout=10) as http:
        ends = await asyncio.gather(
            *(wait_job(http, job_id, finished) for ids in submitted.values() for job_id in ids)
        )
    again, once = ends[:EACH], ends[EACH:]
    for job in again:
        assert job["status"] == "succeeded" and job["attempts"] == 2, job
    for job in once:
        assert job["status"] == "failed" and job["attempts"] == 1, job
        assert job["error"]["code"] == "outcome_unknown", job
