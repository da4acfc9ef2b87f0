"""Schedules: a tick is a job (its trigger named on it), fired once however many gateways run,
and not at all while the trigger is paused. Real gateways, real redis-server."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from tests.gateway.conftest import StartGateway, finished, wait_job
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import StateConfig
from toolmesh.config.jobs_config import JobsConfig, TriggerConfig, parse_cron
from toolmesh.gateway.server import Gateway
from toolmesh.gateway.triggers.schedules import next_cron

EVERY_SECOND = TriggerConfig(name="beat", function="echo", every="1s", arguments={"text": "tick"})


async def trigger_jobs(gateway: Gateway) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.get("/v1/jobs", params={"limit": 1000})
        assert response.status_code == 200, response.text
        return [job for job in response.json()["jobs"] if job.get("trigger")]


def ticks_of(jobs: list[dict[str, Any]]) -> list[str]:
    return sorted(job["request_id"] for job in jobs)


async def test_every_tick_is_a_job_of_its_trigger_that_runs(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(triggers=[EVERY_SECOND])
    await asyncio.sleep(2.6)
    jobs = await trigger_jobs(gateway)
    assert 2 <= len(jobs) <= 3
    assert {job["trigger"] for job in jobs} == {"beat"}
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        done = await wait_job(http, jobs[-1]["id"], finished)
        assert done["status"] == "succeeded", done
        assert "tick" in str(done["result"])
        metrics = (await http.get("/metrics")).text
    assert 'toolmesh_trigger_runs_total{trigger="beat"}' in metrics
    # Ticks land on whole seconds, so replicas agree on them.
    assert all(int(job["request_id"].removeprefix("tick:")) % 1000 == 0 for job in jobs)


async def test_two_gateways_sharing_redis_fire_each_tick_once(
    gateway_factory: StartGateway, redis_server: RedisServer
) -> None:
    state = StateConfig(url=redis_server.url)
    first = await gateway_factory(triggers=[EVERY_SECOND], state=state)
    await gateway_factory(triggers=[EVERY_SECOND], state=state)
    await asyncio.sleep(3.6)
    ticks = ticks_of(await trigger_jobs(first))
    assert len(ticks) >= 3
    assert len(ticks) == len(set(ticks)), f"a tick fired twice: {ticks}"


async def test_two_gateways_on_one_jobs_file_fire_each_tick_once(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    jobs = JobsConfig(path=tmp_path / "shared-jobs.sqlite3")
    first = await gateway_factory(triggers=[EVERY_SECOND], jobs=jobs)
    await gateway_factory(triggers=[EVERY_SECOND], jobs=jobs)
    await asyncio.sleep(3.6)
    ticks = ticks_of(await trigger_jobs(first))
    assert len(ticks) >= 3
    assert len(ticks) == len(set(ticks)), f"a tick fired twice: {ticks}"


async def test_a_paused_trigger_does_not_fire_until_resumed(gateway_factory: StartGateway) -> None:
    paused = EVERY_SECOND.model_copy(update={"paused": True})
    gateway = await gateway_factory(triggers=[paused])
    await asyncio.sleep(2.2)
    assert await trigger_jobs(gateway) == []
    assert gateway.triggers is not None
    await gateway.triggers.service.set_paused("beat", False)
    await asyncio.sleep(2.2)
    assert len(await trigger_jobs(gateway)) >= 1


async def test_a_tick_whose_arguments_do_not_fit_is_a_dead_job_naming_the_problem(
    gateway_factory: StartGateway,
) -> None:
    wrong = TriggerConfig(name="wrong", function="echo", every="1s", arguments={"txt": "typo"})
    gateway = await gateway_factory(triggers=[wrong])
    await asyncio.sleep(1.5)
    jobs = await trigger_jobs(gateway)
    assert jobs and jobs[0]["status"] == "dead"
    assert "txt" in jobs[0]["error"]["message"] and "wrong" in jobs[0]["error"]["message"]
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        metrics = (await http.get("/metrics")).text
        dead = (await http.get("/v1/jobs", params={"status": "dead"})).json()["jobs"]
    assert 'toolmesh_trigger_failures_total{trigger="wrong"}' in metrics
    assert {job["id"] for job in dead} >= {jobs[0]["id"]}


def test_cron_ticks_follow_the_fields_and_the_time_zone() -> None:
    paris = ZoneInfo("Europe/Paris")

    def at(*parts: int) -> float:
        return dt.datetime(*parts, tzinfo=paris).timestamp()

    def next_at(expression: str, after: float) -> dt.datetime:
        found = next_cron(parse_cron(expression), after, paris)
        assert found is not None
        return dt.datetime.fromtimestamp(found, paris)

    assert next_at("0 3 * * *", at(2026, 1, 5, 3, 0)) == dt.datetime(2026, 1, 6, 3, 0, tzinfo=paris)
    assert next_at("*/15 * * * *", at(2026, 1, 5, 10, 7)) == dt.datetime(2026, 1, 5, 10, 15, tzinfo=paris)
    # Weekdays only: Saturday 2026-01-10 goes to Monday the 12th.
    assert next_at("30 9 * * mon-fri", at(2026, 1, 10, 0, 0)).date() == dt.date(2026, 1, 12)
    # Both days restricted: either one fires (the 1st, or any Sunday).
    assert next_at("0 0 1 * sun", at(2026, 2, 2, 0, 0)).date() == dt.date(2026, 2, 8)
    assert next_at("0 0 29 2 *", at(2026, 1, 1, 0, 0)).date() == dt.date(2028, 2, 29)
    assert next_cron(parse_cron("0 0 30 2 *"), time.time(), paris) is None
