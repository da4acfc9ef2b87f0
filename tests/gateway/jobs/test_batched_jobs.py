"""Batched claims and settles (`claim_many`, `settle_many`, `release`), each store on the real
thing (a SQLite file; a redis-server on loopback): a batch is claimed oldest first, every job of
it leased; a settle batch settles each job its worker still holds; released jobs are queued
again at once; a gateway killed with a batch claimed leaves its unsettled jobs to be recovered
after the lease, round after round."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.gateway.jobs.conftest import PROJECT, SERVED, OpenStore, make_job
from toolmesh.errors import Overloaded
from toolmesh.gateway.jobs.job import OUTCOME_UNKNOWN, JobStatus
from toolmesh.gateway.jobs.job_service import CANCELLABLE

#: Rounds of the killed-gateway test.
ROUNDS = 4

#: A gateway's job runner cut short: it claims one batch of jobs, settles the first, says which
#: it claimed, and waits to be killed. argv: store ("sqlite" or a Redis URL), SQLite path, lease.
_DOOMED = """
import asyncio, sys
from pathlib import Path
from toolmesh.gateway.jobs.job import JobStatus
from toolmesh.gateway.jobs.redis_jobs import RedisJobStore
from toolmesh.gateway.jobs.sqlite_jobs import SqliteJobStore
from toolmesh.gateway.state.redis_client import Outage, connect

async def main() -> None:
    where, path, lease = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if where == "sqlite":
        store = SqliteJobStore(Path(path), PROJECT)
    else:
        store = RedisJobStore(connect(where, 5.0), "test:", Outage(where), 3600, 5, PROJECT)
    await store.open()
    jobs = await store.claim_many("doomed", lease, SERVED, 100)
    jobs[0].status = JobStatus.SUCCEEDED
    assert await store.settle_many([(jobs[0], 0.0)], "doomed") == [True]
    print(" ".join(job.id for job in jobs), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


def _where(request: pytest.FixtureRequest) -> str:
    """The store `open_store` opens: "sqlite", or its Redis URL."""
    if request.node.callspec.params["open_store"] == "redis":
        return str(request.getfixturevalue("redis_server").url)
    return "sqlite"


async def test_a_batch_claim_takes_the_oldest_due_jobs_each_leased(open_store: OpenStore) -> None:
    one, two = await open_store(), await open_store()
    jobs = [make_job() for _ in range(5)]
    for job in jobs:
        await one.add(job, 100)
        await asyncio.sleep(0.002)  # distinct creation times: the order is the queue's
    assert await one.claim_many("g1", 5.0, SERVED, 0) == []
    batch = await one.claim_many("g1", 5.0, SERVED, 3)
    assert [job.id for job in batch] == [job.id for job in jobs[:3]], "the oldest first"
    for claimed in batch:
        assert claimed.status is JobStatus.RUNNING and claimed.attempts == 1
        stored = await one.get(claimed.id)
        assert stored is not None and stored.status is JobStatus.RUNNING
    rest = await two.claim_many("g2", 5.0, SERVED, 10)
    assert [job.id for job in rest] == [job.id for job in jobs[3:]], "a batch held is nobody else's"
    assert await one.claim_many("g1", 5.0, SERVED, 10) == []
    assert await one.claim_many("g1", 5.0, frozenset({"other"}), 10) == []
    assert await one.count_active() == 5


async def test_a_settle_batch_settles_each_job_its_worker_still_holds(open_store: OpenStore) -> None:
    store = await open_store()
    done, cancelled, retried = make_job(), make_job(), make_job()
    for job in (done, cancelled, retried):
        await store.add(job, 100)
        await asyncio.sleep(0.002)
    batch = await store.claim_many("g", 5.0, SERVED, 3)
    assert [job.id for job in batch] == [done.id, cancelled.id, retried.id]
    assert await store.cancel(cancelled.id, "alice", CANCELLABLE) is not None
    batch[0].status, batch[0].result = JobStatus.SUCCEEDED, b'{"ok": true}'
    batch[1].status = JobStatus.SUCCEEDED
    batch[2].status, batch[2].error = JobStatus.QUEUED, {"code": "unavailable", "message": "no pod"}
    settles = [(batch[0], 0.0), (batch[1], 0.0), (batch[2], time.time() + 0.4)]
    assert list(await store.settle_many(settles, "g")) == [True, False, True]
    assert await store.settle_many([], "g") == []
    first = await store.get(done.id)
    assert first is not None and first.status is JobStatus.SUCCEEDED and first.result == b'{"ok": true}'
    second = await store.get(cancelled.id)
    assert second is not None and second.status is JobStatus.CANCELLED, "a cancel outranks a late result"
    assert await store.claim_many("g", 5.0, SERVED, 10) == [], "the retry is not due yet"
    await asyncio.sleep(0.5)
    (again,) = await store.claim_many("g", 5.0, SERVED, 10)
    assert again.id == retried.id and again.attempts == 2
    assert list(await store.settle_many([(batch[0], 0.0)], "g")) == [False], "settled once only"
    assert await store.count_active() == 1


async def test_released_jobs_are_queued_again_at_once_their_attempt_given_back(open_store: OpenStore) -> None:
    one, two = await open_store(), await open_store()
    jobs = [make_job() for _ in range(3)]
    for job in jobs:
        await one.add(job, 100)
        await asyncio.sleep(0.002)
    batch = await one.claim_many("g1", 30.0, SERVED, 3)
    assert len(batch) == 3
    await two.release("g2", [job.id for job in batch])  # not g2's to give back
    assert await two.claim_many("g2", 30.0, SERVED, 10) == []
    await one.release("g1", [batch[1].id, batch[2].id])
    await one.release("g1", [])
    back = await two.claim_many("g2", 30.0, SERVED, 10)
    assert sorted(job.id for job in back) == sorted([batch[1].id, batch[2].id])
    assert all(job.attempts == 1 for job in back), "a released claim is no attempt"
    kept = await one.get(batch[0].id)
    assert kept is not None and kept.status is JobStatus.RUNNING and kept.attempts == 1
    assert await one.count_active() == 3


@pytest.mark.slow
async def test_a_gateway_killed_with_a_batch_claimed_leaves_it_to_the_lease_round_after_round(
    open_store: OpenStore, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    where = _where(request)
    survivor = await open_store()
    script = f"PROJECT = {PROJECT!r}\nSERVED = {set(SERVED)!r}\n" + _DOOMED
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    lease = 0.6
    for round_ in range(ROUNDS):
        again = [make_job() for _ in range(4)]
        once = [make_job(idempotent=False) for _ in range(2)]
        for job in (*again, *once):
            await survivor.add(job, 100)
            await asyncio.sleep(0.002)
        doomed = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            where,
            str(tmp_path / "jobs" / "jobs.sqlite3"),
            str(lease),
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        try:
            assert doomed.stdout is not None
            line = await asyncio.wait_for(doomed.stdout.readline(), 30)
            claimed = line.decode().split()
        finally:
            doomed.send_signal(signal.SIGKILL)
            await doomed.communicate()
        assert sorted(claimed) == sorted(job.id for job in (*again, *once)), (round_, line)
        settled = claimed[0]
        assert settled == again[0].id, "the oldest first"
        # Held until the lease lapses: nothing of the batch runs meanwhile.
        assert await survivor.claim_many("survivor", 5.0, SERVED, 10) == []
        ran: set[str] = set()
        end = time.monotonic() + 15
        while ran != {job.id for job in again[1:]}:
            assert time.monotonic() < end, (round_, ran)
            await survivor.recover(5)
            for job in await survivor.claim_many("survivor", 5.0, SERVED, 10):
                assert job.id not in ran and job.id != settled, (round_, "run twice", job.id)
                assert job.idempotent and job.attempts == 2, (round_, job)
                ran.add(job.id)
                job.status = JobStatus.SUCCEEDED
                assert list(await survivor.settle_many([(job, 0.0)], "survivor")) == [True]
            await asyncio.sleep(0.1)
        await survivor.recover(5)
        for job in (*again, *once):
            stored = await survivor.get(job.id)
            assert stored is not None, job.id
            if job.id == settled:
                assert stored.status is JobStatus.SUCCEEDED and stored.attempts == 1, (round_, stored)
            elif job.idempotent:
                assert stored.status is JobStatus.SUCCEEDED and stored.attempts == 2, (round_, stored)
            else:
                assert stored.status is JobStatus.FAILED and stored.attempts == 1, (round_, stored)
                assert stored.error == OUTCOME_UNKNOWN, stored.error
        assert await survivor.count_active() == 0, round_


async def test_adds_made_at_once_each_meet_the_bound_and_a_repeat_is_added_once(
    open_store: OpenStore,
) -> None:
    """Adds made at once go to the store together (one pipeline, one transaction), each with its
    own outcome: the bound counts those of the same batch, and a message delivered twice in one
    batch (the same job id) is one job."""
    store = await open_store()
    for round_ in range(3):
        jobs = [make_job() for _ in range(5)]
        twice = make_job()
        twice.id = jobs[0].id
        made = [jobs[0], twice, *jobs[1:]]
        outcomes = await asyncio.gather(
            *(store.add(job, 3 * (round_ + 1)) for job in made), return_exceptions=True
        )
        assert outcomes[:4] == [None] * 4, (round_, outcomes)
        assert all(isinstance(outcome, Overloaded) for outcome in outcomes[4:]), (round_, outcomes)
        assert await store.count_active() == 3 * (round_ + 1)
        for job in jobs[3:]:
            assert await store.get(job.id) is None, "a refused add leaves nothing"
