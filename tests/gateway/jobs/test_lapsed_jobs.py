"""What becomes of a job whose gateway died mid-run, in each store (a SQLite file shared by two
gateways; a real redis-server): an idempotent one is queued again, another ends failed,
`outcome_unknown`, never run twice behind its caller's back, never stuck, never lost."""

from __future__ import annotations

import asyncio

from tests.gateway.jobs.conftest import PROJECT, SERVED, OpenStore, make_job
from tests.gateway.state.conftest import RedisServer
from toolmesh.gateway.jobs.job import OUTCOME_UNKNOWN, JobStatus
from toolmesh.gateway.jobs.redis_jobs import RedisJobStore
from toolmesh.gateway.state.redis_client import Outage, connect

ROUNDS = 5


async def test_lapsed_jobs_run_again_only_when_idempotent_round_after_round(open_store: OpenStore) -> None:
    one, two = await open_store(), await open_store()
    for round_ in range(ROUNDS):
        again = make_job(idempotent=True)
        once = make_job(idempotent=False, callback="http://127.0.0.1:9/hook")
        await one.add(again, 10)
        await one.add(once, 10)
        claimed = [await one.claim("dying", lease=0.2, functions=SERVED) for _ in range(2)]
        assert {c.id for c in claimed if c is not None} == {again.id, once.id}
        await asyncio.sleep(0.3)  # the gateway "dies": nobody renews its leases
        assert await two.recover(max_attempts=5) == 2, round_
        failed = await two.get(once.id)
        assert failed is not None and failed.status is JobStatus.FAILED, failed
        assert failed.error == OUTCOME_UNKNOWN and failed.attempts == 1 and failed.finished is not None
        assert [j.id for j in await two.take_callbacks(10, hold=60)] == [once.id], "its caller is told"
        taken = await two.claim("survivor", lease=5, functions=SERVED)
        assert taken is not None and taken.id == again.id and taken.attempts == 2
        assert await two.claim("survivor", lease=5, functions=SERVED) is None, "the other never runs again"
        taken.status = JobStatus.SUCCEEDED
        assert await two.settle(taken, "survivor")
        assert await two.count_active() == 0


async def test_a_job_not_idempotent_out_of_attempts_still_says_its_outcome_is_unknown(
    open_store: OpenStore,
) -> None:
    store = await open_store()
    job = make_job(idempotent=False)
    await store.add(job, 10)
    assert await store.claim("dying", lease=0.1, functions=SERVED) is not None
    await asyncio.sleep(0.2)
    assert await store.recover(max_attempts=1) == 1
    stored = await store.get(job.id)
    assert stored is not None and stored.status is JobStatus.FAILED and stored.error == OUTCOME_UNKNOWN


async def test_redis_fails_a_reclaimed_entry_that_is_not_idempotent_without_recover(
    redis_server: RedisServer,
) -> None:
    # XAUTOCLAIM finds the dead gateway's entry before any `recover` runs: the same rule holds.
    clients = [connect(redis_server.url, 5.0) for _ in range(2)]
    one, two = [
        RedisJobStore(c, "t:", Outage(redis_server.url), ttl=60, max_attempts=5, project=PROJECT)
        for c in clients
    ]
    try:
        for store in (one, two):
            await store.open()
        for _ in range(ROUNDS):
            once, again = make_job(idempotent=False), make_job(idempotent=True)
            await one.add(once, 10)
            await one.add(again, 10)
            assert await one.claim("g1", lease=0.2, functions=SERVED) is not None
            assert await one.claim("g1", lease=0.2, functions=SERVED) is not None
            await asyncio.sleep(0.3)
            # Its own lease is the idle time XAUTOCLAIM takes an entry after: short, as theirs.
            taken = await two.claim("g2", lease=0.25, functions=SERVED)
            assert taken is not None and taken.id == again.id and taken.attempts == 2
            failed = await two.get(once.id)
            assert (
                failed is not None and failed.status is JobStatus.FAILED and failed.error == OUTCOME_UNKNOWN
            )
            taken.status = JobStatus.SUCCEEDED
            assert await two.settle(taken, "g2")
            assert await two.count_active() == 0
            pending = await clients[0].xpending(f"t:jobs:{PROJECT}:queue", "workers")
            assert pending["pending"] == 0, "nothing left on the stream"
    finally:
        for client in clients:
            await client.aclose()
