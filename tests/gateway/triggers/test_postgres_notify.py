"""PostgreSQL LISTEN/NOTIFY: each NOTIFY payload is one job; a bad one is a dead job and the
listener goes on; with two gateways one listens (the lease holder), so each NOTIFY runs once,
and when it stops the other takes over. Real PostgreSQL 15, real gateways, real redis-server."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.gateway.conftest import StartGateway, finished, wait_job
from tests.gateway.state.conftest import RedisServer
from tests.gateway.triggers.conftest import PostgresServer
from tests.gateway.triggers.test_redis_streams import trigger_jobs
from toolmesh.config import StateConfig
from toolmesh.config.jobs_config import JobsConfig, TriggerConfig
from toolmesh.gateway.server import Gateway
from toolmesh.gateway.triggers.postgres_notify import LEASE, RENEW, NotifyListener


def rows(url: str, **more: Any) -> TriggerConfig:
    return TriggerConfig(name="rows", function="add", postgres_url=url, postgres_channel="row_events", **more)


@pytest.fixture
async def db(postgres_server: PostgresServer) -> AsyncIterator[Any]:
    conn = await asyncpg.connect(postgres_server.url)
    yield conn
    await conn.close()


def listener(gateway: Gateway) -> NotifyListener:
    assert gateway.triggers is not None
    (found,) = [r for r in gateway.triggers.readers if isinstance(r, NotifyListener)]
    return found


async def until_listening(*gateways: Gateway, timeout: float = 15.0) -> Gateway:
    """The one gateway of `gateways` that listens, once one does."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        on = [g for g in gateways if listener(g).listening]
        if on:
            assert len(on) == 1, "two gateways listen at once"
            await asyncio.sleep(0.1)  # its LISTEN is in place
            return on[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no gateway listens")


async def notify(db: Any, payload: str) -> None:
    await db.execute("SELECT pg_notify('row_events', $1)", payload)


async def test_each_notify_is_a_job_and_a_bad_one_is_dead(
    gateway_factory: StartGateway, postgres_server: PostgresServer, db: Any
) -> None:
    gateway = await gateway_factory(triggers=[rows(postgres_server.url)])
    await until_listening(gateway)
    for n in range(3):  # in a loop: a bad payload never stops the listener
        await notify(db, json.dumps({"a": n, "b": 10}))
        await notify(db, "{not json")
        await notify(db, '{"a": "x", "b": 1}')
    jobs = await trigger_jobs(gateway, 9)
    assert len(jobs) == 9
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        results = [await wait_job(http, job["id"], finished) for job in jobs]
    assert sorted(r["status"] for r in results).count("succeeded") == 3, results
    assert sorted(r["result"]["structured"] for r in results if r["status"] == "succeeded") == [10, 11, 12]
    assert any("not JSON" in r["error"]["message"] for r in results if r["status"] == "dead")
    assert {r["request_id"].split(":")[0] for r in results} == {"notify"}


async def test_two_gateways_one_listens_each_notify_once_and_the_other_takes_over(
    gateway_factory: StartGateway, postgres_server: PostgresServer, redis_server: RedisServer, db: Any
) -> None:
    state = StateConfig(url=redis_server.url)
    gateways = [await gateway_factory(triggers=[rows(postgres_server.url)], state=state) for _ in range(2)]
    total = 0
    for round_ in range(2):
        leader = await until_listening(*gateways)
        for n in range(50):
            await notify(db, json.dumps({"a": n, "b": round_}))
        total += 50
        await trigger_jobs(gateways[0], total)
        await asyncio.sleep(0.5)
        jobs = await trigger_jobs(gateways[0], total + 1, timeout=0.1)
        assert len(jobs) == total, f"round {round_}: {len(jobs)} jobs for {total} NOTIFYs"
        # The leader stops listening (as at shutdown): the other takes the lease.
        await listener(leader).stop()
        gateways.remove(leader)


async def test_a_paused_trigger_listens_to_nothing(
    gateway_factory: StartGateway, postgres_server: PostgresServer, db: Any
) -> None:
    gateway = await gateway_factory(triggers=[rows(postgres_server.url, paused=True)])
    await asyncio.sleep(2.5)
    assert not listener(gateway).listening
    await notify(db, json.dumps({"a": 1, "b": 1}))
    assert await trigger_jobs(gateway, 1, timeout=1.0) == []
    assert gateway.triggers is not None
    await gateway.triggers.service.set_paused("rows", False)
    await until_listening(gateway)
    await notify(db, json.dumps({"a": 1, "b": 1}))
    assert len(await trigger_jobs(gateway, 1)) == 1


async def test_when_the_listening_gateway_dies_another_takes_over_after_its_lease(
    gateway_factory: StartGateway, postgres_server: PostgresServer, redis_server: RedisServer, db: Any
) -> None:
    state = StateConfig(url=redis_server.url)
    gateways = [await gateway_factory(triggers=[rows(postgres_server.url)], state=state) for _ in range(3)]
    total = 0
    for round_ in range(2):
        leader = await until_listening(*gateways)
        # It dies: no more renewals, no release, its session gone (as when the process is killed).
        dead = listener(leader)
        assert dead._task is not None
        dead._task.cancel()
        await dead._unlisten()
        gateways.remove(leader)
        began = time.monotonic()
        await until_listening(*gateways, timeout=LEASE + 5)
        assert time.monotonic() - began <= LEASE + 2 * RENEW + 1
        for n in range(20):
            await notify(db, json.dumps({"a": n, "b": round_}))
        total += 20
        await trigger_jobs(gateways[0], total)
        await asyncio.sleep(0.5)
        assert len(await trigger_jobs(gateways[0], total + 1, timeout=0.1)) == total


async def test_gateways_sharing_a_jobs_file_elect_one_listener_there(
    gateway_factory: StartGateway, postgres_server: PostgresServer, db: Any, tmp_path: Path
) -> None:
    jobs = JobsConfig(path=tmp_path / "shared-jobs.sqlite3")
    gateways = [await gateway_factory(triggers=[rows(postgres_server.url)], jobs=jobs) for _ in range(2)]
    total = 0
    for round_ in range(2):
        leader = await until_listening(*gateways)
        for n in range(30):
            await notify(db, json.dumps({"a": n, "b": round_}))
        total += 30
        await trigger_jobs(gateways[0], total)
        await asyncio.sleep(0.5)
        assert len(await trigger_jobs(gateways[0], total + 1, timeout=0.1)) == total
        await listener(leader).stop()
        gateways.remove(leader)
