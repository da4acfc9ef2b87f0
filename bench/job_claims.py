"""What a claim costs now that it names the project and the functions a gateway serves (issue #28
"one project, one data directory"): the SQLite job store, claim + settle of queued jobs, side by
side for catalogs of 10 to 10,000 functions, and with another project's 20,000 jobs queued in the
same file (which this gateway must neither take nor wade through).

    .venv/bin/python bench/job_claims.py [--jobs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from toolmesh.gateway.jobs.job import Job, JobStatus, new_job_id
from toolmesh.gateway.jobs.sqlite_jobs import SqliteJobStore

PROJECT, OTHER = "bench-000000000001", "other-000000000002"


async def _fill(store: SqliteJobStore, count: int, function: str) -> None:
    for _ in range(count):
        await store.add(Job(new_job_id(), "alice", function, b"{}"), 10**9)


async def scenario(directory: Path, catalog: int, foreign: int, jobs: int) -> tuple[float, float, float]:
    path = directory / f"jobs-{catalog}-{foreign}.sqlite3"
    store, other = SqliteJobStore(path, PROJECT), SqliteJobStore(path, OTHER)
    await store.open()
    await other.open()
    try:
        # The other project's jobs call a function of the same name as ours.
        await _fill(other, foreign, "fn_0")
        await _fill(store, jobs, "fn_0")
        served = frozenset(f"fn_{i}" for i in range(catalog))
        claims: list[float] = []
        started = time.perf_counter()
        while True:
            t = time.perf_counter()
            job = await store.claim("w", 30.0, served)
            claims.append(time.perf_counter() - t)
            if job is None:
                break
            job.status = JobStatus.SUCCEEDED
            await store.settle(job, "w")
        elapsed = time.perf_counter() - started
        assert len(claims) == jobs + 1 and await other.count_active() == foreign
        claims.sort()
        return statistics.median(claims) * 1e6, claims[int(len(claims) * 0.99)] * 1e6, jobs / elapsed
    finally:
        await store.close()
        await other.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    args = parser.parse_args()
    print(
        f"{'catalog':>8} {'other project queued':>21} {'claim p50 us':>13} {'claim p99 us':>13} {'jobs/s':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for catalog, foreign in ((10, 0), (10, 20_000), (1_000, 0), (10_000, 0)):
            p50, p99, rate = await scenario(Path(tmp), catalog, foreign, args.jobs)
            print(f"{catalog:>8} {foreign:>21} {p50:>13.0f} {p99:>13.0f} {rate:>8.0f}")


if __name__ == "__main__":
    asyncio.run(main())
