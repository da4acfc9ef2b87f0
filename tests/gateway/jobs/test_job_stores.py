"""The job stores' contract, each on the real thing (a SQLite file; a redis-server on loopback):
claims, leases shared by two stores (two gateways), bounds, dead letters, purging."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests.gateway.jobs.conftest import PROJECT, SERVED, OpenStore, make_job
from tests.gateway.state.conftest import RedisServer
from toolmesh.errors import Overloaded
from toolmesh.gateway.jobs import sqlite_jobs
from toolmesh.gateway.jobs.job import CallbackState, JobStatus
from toolmesh.gateway.jobs.job_service import CANCELLABLE
from toolmesh.gateway.jobs.redis_jobs import RedisJobStore
from toolmesh.gateway.jobs.sqlite_jobs import SqliteJobStore
from toolmesh.gateway.state.redis_client import Outage, connect


async def test_a_lapsed_lease_lets_another_gateway_take_the_job(open_store: OpenStore) -> None:
    one, two = await open_store(), await open_store()
    job = make_job()
    await one.add(job, 10)
    claimed = await one.claim("gateway-1", lease=0.3, functions=SERVED)
    assert claimed is not None and claimed.id == job.id and claimed.attempts == 1
    assert await two.claim("gateway-2", lease=5, functions=SERVED) is None, "a running job is nobody else's"
    assert await two.recover(max_attempts=5) == 0, "its lease still runs"
    await asyncio.sleep(0.4)
    assert await two.recover(max_attempts=5) == 1
    again = await two.claim("gateway-2", lease=5, functions=SERVED)
    assert again is not None and again.attempts == 2
    # The first gateway comes back with a result: too late, the job is another's now.
    claimed.status = JobStatus.SUCCEEDED
    assert not await one.settle(claimed, "gateway-1")
    again.status = JobStatus.SUCCEEDED
    assert await two.settle(again, "gateway-2")
    stored = await one.get(job.id)
    assert stored is not None and stored.status is JobStatus.SUCCEEDED and stored.finished is not None


async def test_renewed_leases_hold_and_jobs_out_of_attempts_are_dead(open_store: OpenStore) -> None:
    store = await open_store()
    held, spent = make_job(), make_job(callback="http://127.0.0.1:9/hook")
    await store.add(held, 10)
    await store.add(spent, 10)
    first = await store.claim("g", lease=0.3, functions=SERVED)
    second = await store.claim("g", lease=0.3, functions=SERVED)
    assert first is not None and second is not None
    await asyncio.sleep(0.2)
    await store.renew("g", [first.id, second.id], lease=0.3)
    await store.renew("other", [first.id], lease=60)  # not its job: no effect
    await asyncio.sleep(0.2)
    assert await store.recover(max_attempts=1) == 0
    await asyncio.sleep(0.3)
    # Each had one attempt of one: dead, with the reason, and a callback to send.
    assert await store.recover(max_attempts=1) == 2
    dead = await store.get(spent.id)
    assert dead is not None and dead.status is JobStatus.DEAD
    assert dead.error == {"code": "unavailable", "message": "the gateway running it stopped"}
    assert [j.id for j in await store.take_callbacks(10, hold=5)] == [spent.id]
    assert await store.take_callbacks(10, hold=5) == [], "held while it is being delivered"


async def test_the_bound_counts_queued_and_running_jobs(open_store: OpenStore) -> None:
    store = await open_store()
    await store.add(make_job(), 2)
    await store.add(make_job(), 2)
    assert await store.claim("g", lease=5, functions=SERVED) is not None
    with pytest.raises(Overloaded, match="max_queued"):
        await store.add(make_job(), 2)
    assert await store.count_active() == 2


async def test_a_backed_off_job_waits_and_finished_jobs_are_purged(open_store: OpenStore) -> None:
    store = await open_store()
    job = make_job()
    await store.add(job, 10)
    claimed = await store.claim("g", lease=5, functions=SERVED)
    assert claimed is not None
    claimed.status = JobStatus.QUEUED
    assert await store.settle(claimed, "g", run_after=time.time() + 0.3)
    assert await store.claim("g", lease=5, functions=SERVED) is None, "not due yet"
    await asyncio.sleep(0.35)
    claimed = await store.claim("g", lease=5, functions=SERVED)
    assert claimed is not None and claimed.attempts == 2
    claimed.status = JobStatus.SUCCEEDED
    assert await store.settle(claimed, "g")
    pending = make_job(callback="http://127.0.0.1:9/hook")
    await store.add(pending, 10)
    assert await store.cancel(pending.id, "bob", CANCELLABLE) is None, "only its owner cancels it"
    assert await store.cancel(pending.id, "alice", CANCELLABLE) is not None
    assert await store.purge(time.time() - 60) == 0
    assert await store.purge(time.time() + 1) == 2
    assert await store.list("alice", None, 10) == []


async def test_a_running_job_is_cancelled_and_its_result_dropped(open_store: OpenStore) -> None:
    store = await open_store()
    job = make_job()
    await store.add(job, 1)
    running = await store.claim("g", lease=5, functions=SERVED)
    assert running is not None and running.status is JobStatus.RUNNING
    cancelled = await store.cancel(job.id, "alice", CANCELLABLE)
    assert cancelled is not None and cancelled.status is JobStatus.CANCELLED
    assert await store.count_active() == 0, "a cancelled job frees its place in the queue"
    running.status = JobStatus.SUCCEEDED
    assert not await store.settle(running, "g"), "the worker's late result is dropped"
    assert await store.claim("g", lease=5, functions=SERVED) is None
    again = await store.get(job.id)
    assert again is not None and again.status is JobStatus.CANCELLED and again.result is None
    assert await store.cancel(job.id, "alice", CANCELLABLE) is None, "a finished job is not cancelled twice"


async def test_answers_merge_on_a_failed_job_and_it_can_be_cancelled(open_store: OpenStore) -> None:
    store = await open_store()
    job = make_job()
    await store.add(job, 10)
    assert await store.answer(job.id, "alice", b'{"a": {"x": 1}}') is None, "only a failed job"
    running = await store.claim("g", lease=5, functions=SERVED)
    assert running is not None
    running.status = JobStatus.FAILED
    assert await store.settle(running, "g")
    assert await store.answer(job.id, "bob", b'{"a": {"x": 1}}') is None, "only its owner's"
    await store.answer(job.id, "alice", b'{"a": {"x": 1}}')
    both = await store.answer(job.id, "alice", b'{"b": {"y": [2]}}')
    assert both is not None and both.answers is not None
    assert json.loads(both.answers) == {"a": {"x": 1}, "b": {"y": [2]}}
    again = await store.requeue(job.id, "alice", (JobStatus.FAILED,))
    assert again is not None and again.answers == both.answers, "answers outlive a requeue"
    claimed = await store.claim("g", lease=5, functions=SERVED)
    assert claimed is not None and claimed.answers is not None
    claimed.status = JobStatus.FAILED
    assert await store.settle(claimed, "g")
    assert await store.cancel(job.id, "alice", CANCELLABLE) is None
    cancelled = await store.cancel(job.id, "alice", (JobStatus.FAILED,))
    assert cancelled is not None and cancelled.status is JobStatus.CANCELLED
    assert await store.count_active() == 0


async def test_dead_letters_are_listed_per_key_and_retried(open_store: OpenStore) -> None:
    one, two = await open_store(), await open_store()
    mine, theirs = make_job("alice"), make_job("bob")
    for job in (mine, theirs):
        await one.add(job, 10)
        claimed = await one.claim("g", lease=5, functions=SERVED)
        assert claimed is not None
        claimed.status, claimed.error = JobStatus.DEAD, {"code": "unavailable", "message": "no pod"}
        assert await one.settle(claimed, "g")
    assert await two.count_active() == 0, "dead jobs leave the bound"
    assert [j.id for j in await two.list("alice", JobStatus.DEAD, 10)] == [mine.id]
    assert [j.id for j in await two.list("bob", None, 10)] == [theirs.id]
    assert await two.requeue(mine.id, "bob", [JobStatus.DEAD]) is None, "only its owner retries it"
    again = await two.requeue(mine.id, "alice", [JobStatus.DEAD])
    assert again is not None and again.status is JobStatus.QUEUED and again.attempts == 0
    assert again.error is None and again.result is None
    assert await two.list("alice", JobStatus.DEAD, 10) == []
    assert await two.count_active() == 1
    claimed = await one.claim("g", lease=5, functions=SERVED)
    assert claimed is not None and claimed.id == mine.id and claimed.attempts == 1


async def test_a_jobs_file_from_before_answers_is_opened_and_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old_schema = sqlite_jobs._SCHEMA.replace(",\n    answers BLOB,\n    project TEXT NOT NULL DEFAULT ''", "")
    assert old_schema != sqlite_jobs._SCHEMA
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(old_schema)
    store = SqliteJobStore(path, PROJECT)
    await store.open()
    try:
        job = make_job()
        await store.add(job, 10)
        found = await store.get(job.id)
        assert found is not None and found.answers is None
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert {"answers", "project"} <= {row[1] for row in db.execute("PRAGMA table_info(jobs)")}


async def test_redis_reclaims_an_idle_entry_with_xautoclaim_and_gives_back_a_live_one(
    redis_server: RedisServer,
) -> None:
    clients = [connect(redis_server.url, 5.0) for _ in range(2)]
    one, two = [
        RedisJobStore(c, "t:", Outage(redis_server.url), ttl=60, max_attempts=5, project=PROJECT)
        for c in clients
    ]
    try:
        for store in (one, two):
            await store.open()
        lapsing, live = make_job(), make_job()
        await one.add(lapsing, 10)
        await one.add(live, 10)
        first = await one.claim("g1", lease=0.2, functions=SERVED)
        held = await one.claim("g1", lease=30, functions=SERVED)
        assert first is not None and held is not None
        await asyncio.sleep(0.3)
        # No `recover` ran: the entry idle past the claimer's lease is taken by XAUTOCLAIM.
        again = await two.claim("g2", lease=0.25, functions=SERVED)
        assert again is not None and again.id == lapsing.id and again.attempts == 2
        # `held` is idle past that lease too, but its own runs 30 s: given back, not taken.
        assert await two.claim("g2", lease=0.25, functions=SERVED) is None
        pending = await clients[0].xpending_range(f"t:jobs:{PROJECT}:queue", "workers", "-", "+", 10)
        assert {p["consumer"] for p in pending} == {b"g1", b"g2"}
        held.status = JobStatus.SUCCEEDED
        assert await one.settle(held, "g1")
        assert await two.count_active() == 1
    finally:
        for client in clients:
            await client.aclose()


async def test_two_projects_on_one_store_never_see_each_others_jobs(open_store: OpenStore) -> None:
    """Gateways of two projects on the same file (or Redis), with a function of the same name:
    neither claims, lists, returns, cancels or counts the other's jobs."""
    mine, theirs = await open_store(), await open_store("other-fedcba987654")
    my_job, their_job = (
        make_job(callback="https://hook.example/x"),
        make_job(callback="https://hook.example/y"),
    )
    await mine.add(my_job, 10)
    await theirs.add(their_job, 1)  # their bound counts only their jobs
    assert await mine.get(their_job.id) is None and await theirs.get(my_job.id) is None
    assert [j.id for j in await mine.list("alice", None, 10)] == [my_job.id]
    assert await mine.cancel(their_job.id, "alice", CANCELLABLE) is None
    assert await mine.count_active() == 1 and await theirs.count_active() == 1
    claimed = await mine.claim("g1", lease=5, functions=SERVED)
    assert claimed is not None and claimed.id == my_job.id
    assert await mine.claim("g1", lease=5, functions=SERVED) is None, "theirs is not mine to run"
    found = await theirs.claim("g2", lease=5, functions=SERVED)
    assert found is not None and found.id == their_job.id
    for store, job, worker in ((mine, claimed, "g1"), (theirs, found, "g2")):
        job.status, job.callback_state = JobStatus.SUCCEEDED, CallbackState.PENDING
        assert await store.settle(job, worker)
    # Their callbacks are theirs to sign and send, and their finished jobs theirs to purge.
    assert [j.id for j in await mine.take_callbacks(10, 30)] == [my_job.id]
    for store, job in ((mine, my_job), (theirs, their_job)):
        await store.callback_done(job.id, CallbackState.DELIVERED, 1, 0.0)
    assert await mine.purge(time.time() + 1) == 1
    assert await mine.get(my_job.id) is None and await theirs.get(their_job.id) is not None


async def test_a_gateway_claims_only_jobs_of_functions_it_serves(open_store: OpenStore) -> None:
    """Two gateways of one project serving different functions (a rolling update): each job
    runs where its function is, whatever the order they look in."""
    adds, muls = await open_store(), await open_store()
    for function in ("mul", "add", "mul"):
        await adds.add(make_job(function=function), 10)
    first = await adds.claim("g-add", lease=5, functions={"add"})
    assert first is not None and first.function == "add"
    assert await adds.claim("g-add", lease=5, functions={"add"}) is None
    taken = [await muls.claim("g-mul", lease=5, functions={"mul"}) for _ in range(3)]
    assert [job.function for job in taken if job is not None] == ["mul", "mul"]
    assert await adds.claim("g-add", lease=5, functions=()) is None, "serving nothing, it takes nothing"
    # A reload that adds a function: its jobs are this gateway's from the next claim.
    await adds.add(make_job(function="mul"), 10)
    assert await adds.claim("g-add", lease=5, functions={"add"}) is None
    grown = await adds.claim("g-add", lease=5, functions={"add", "mul"})
    assert grown is not None and grown.function == "mul"


async def test_a_jobs_file_from_before_projects_gains_the_column_and_hides_its_old_jobs(
    tmp_path: Path,
) -> None:
    """Jobs queued before projects existed belong to no project: a gateway opening the old file
    neither runs nor shows them (they could be another project's), and its own work as usual."""
    path = tmp_path / "old.sqlite3"
    old_schema = sqlite_jobs._SCHEMA.replace(",\n    project TEXT NOT NULL DEFAULT ''", "")
    assert old_schema != sqlite_jobs._SCHEMA
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(old_schema + "CREATE INDEX jobs_due ON jobs (status, run_after);")
        db.execute(
            "INSERT INTO jobs (id, owner, function, arguments, status, created, updated)"
            " VALUES ('job_old', 'alice', 'add', ?, 'queued', 1, 1)",
            (b"{}",),
        )
        db.commit()
    store = SqliteJobStore(path, PROJECT)
    await store.open()
    try:
        assert await store.get("job_old") is None and await store.list("alice", None, 10) == []
        assert await store.claim("g", lease=5, functions=SERVED) is None
        new = make_job()
        await store.add(new, 10)
        claimed = await store.claim("g", lease=5, functions=SERVED)
        assert claimed is not None and claimed.id == new.id
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        indexes = {row[1] for row in db.execute("PRAGMA index_list(jobs)")}
    assert "jobs_queue" in indexes and "jobs_due" not in indexes
