"""Redis Streams: each entry is one job (its fields, or one `json` field, as the arguments),
acknowledged once recorded; a bad entry is a dead job and the stream goes on; a dead gateway's
pending entries are claimed by another. Real gateways, real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from tests.gateway.conftest import StartGateway, finished, wait_job
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import StateConfig
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.server import Gateway
from toolmesh.gateway.triggers.trigger_service import TriggerMessage

ECHO = TriggerConfig(name="orders", function="echo", redis_stream="orders")
ADD = TriggerConfig(name="sums", function="add", redis_stream="sums", claim_after=0.5)


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[redis.Redis]:
    found = redis.Redis.from_url(redis_server.url)
    yield found
    await found.aclose()


async def trigger_jobs(gateway: Gateway, want: int, timeout: float = 15.0) -> list[dict[str, Any]]:
    """The trigger jobs once there are `want` of them (or the timeout)."""
    end = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        while True:
            jobs = [j for j in (await http.get("/v1/jobs?limit=1000")).json()["jobs"] if j.get("trigger")]
            if len(jobs) >= want or time.monotonic() > end:
                return jobs
            await asyncio.sleep(0.05)


async def pending(client: redis.Redis, stream: str, trigger: str) -> int:
    groups = await client.xinfo_groups(stream)
    (group,) = [g for g in groups if g["name"].decode().endswith(":" + trigger)]
    return int(group["pending"])


async def test_entries_are_jobs_with_their_fields_or_json_as_arguments(
    gateway_factory: StartGateway, redis_server: RedisServer, client: redis.Redis
) -> None:
    gateway = await gateway_factory(triggers=[ECHO, ADD], state=StateConfig(url=redis_server.url))
    await client.xadd("orders", {"text": "order 1"})
    await client.xadd("sums", {"a": "2", "b": "3"})  # strings, read as the function's integers
    await client.xadd("sums", {"json": '{"a": 10, "b": 20}'})
    jobs = await trigger_jobs(gateway, 3)
    assert len(jobs) == 3
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        results = [await wait_job(http, job["id"], finished) for job in jobs]
    assert all(r["status"] == "succeeded" for r in results), results
    text = " ".join(str(r["result"]) for r in results)
    assert "order 1" in text and "5" in text and "30" in text
    assert {r["request_id"].split(":")[0] for r in results} == {"stream"}
    assert await pending(client, "orders", "orders") == 0


async def test_a_bad_entry_is_a_dead_job_and_the_stream_goes_on(
    gateway_factory: StartGateway, redis_server: RedisServer, client: redis.Redis
) -> None:
    gateway = await gateway_factory(triggers=[ADD], state=StateConfig(url=redis_server.url))
    await client.xadd("sums", {"json": "{not json"})
    await client.xadd("sums", {"a": "two"})
    await client.xadd("sums", {"c": "1"})
    await client.xadd("sums", {"a": "1", "b": "1"})
    jobs = await trigger_jobs(gateway, 4)
    by_status = sorted(job["status"] for job in jobs)
    assert by_status.count("dead") == 3, jobs
    assert any("not JSON" in job["error"]["message"] for job in jobs if job["status"] == "dead")
    assert await pending(client, "sums", "sums") == 0


async def test_two_gateways_share_a_stream_each_entry_once(
    gateway_factory: StartGateway, redis_server: RedisServer, client: redis.Redis
) -> None:
    state = StateConfig(url=redis_server.url)
    first = await gateway_factory(triggers=[ECHO], state=state)
    await gateway_factory(triggers=[ECHO], state=state)
    ids = [await client.xadd("orders", {"text": f"order {i}"}) for i in range(200)]
    jobs = await trigger_jobs(first, 200)
    sources = [job["request_id"] for job in jobs]
    assert len(sources) == 200 and len(set(sources)) == 200
    assert set(sources) == {f"stream:{i.decode()}" for i in ids}


async def test_a_dead_consumers_pending_entries_are_claimed_and_run(
    gateway_factory: StartGateway, redis_server: RedisServer, client: redis.Redis
) -> None:
    gateway = await gateway_factory(triggers=[ADD], state=StateConfig(url=redis_server.url))
    await asyncio.sleep(0.3)  # its group exists
    (group,) = [g["name"].decode() for g in await client.xinfo_groups("sums")]
    # A gateway that read three entries and died before recording them: nothing acknowledged.
    # (This one is paused meanwhile, so only the dead one reads them.)
    assert gateway.triggers is not None
    await gateway.triggers.service.set_paused("sums", True)
    await asyncio.sleep(2.5)
    for n in range(3):
        await client.xadd("sums", {"a": str(n), "b": "100"})
    read = await client.xreadgroup(group, "died", {"sums": ">"}, count=10)
    assert len(read[0][1]) == 3
    await gateway.triggers.service.set_paused("sums", False)
    jobs = await trigger_jobs(gateway, 3, timeout=20)
    assert len(jobs) == 3
    assert await pending(client, "sums", "sums") == 0


async def test_a_message_delivered_twice_is_one_job(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(triggers=[ECHO.model_copy(update={"redis_stream": None, "every": "1h"})])
    assert gateway.triggers is not None
    service = gateway.triggers.service
    message = TriggerMessage({"text": "once"}, "stream:1-0", key="1-0")
    first = await service.fire(service.get("orders"), message)
    again = await service.fire(service.get("orders"), message)
    assert first.id == again.id
    assert len(await trigger_jobs(gateway, 2, timeout=0.5)) == 1


async def test_a_stream_with_no_redis_to_read_fails_start_up(gateway_factory: StartGateway) -> None:
    from toolmesh.config import ConfigError

    with pytest.raises(ConfigError, match="redis_stream needs redis_url"):
        await gateway_factory(triggers=[ECHO])


def metric(text: str, name: str, trigger: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(f'{name}{{trigger="{trigger}"}}')]
    return float(line.split()[-1])


async def test_lag_and_the_oldest_pending_age_are_metrics(
    gateway_factory: StartGateway, redis_server: RedisServer, client: redis.Redis
) -> None:
    gateway = await gateway_factory(triggers=[ADD], state=StateConfig(url=redis_server.url))
    assert gateway.triggers is not None
    await asyncio.sleep(0.3)  # its group exists
    await gateway.triggers.service.set_paused("sums", True)
    await asyncio.sleep(1.5)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        for round_ in range(2):
            for n in range(5):
                await client.xadd("sums", {"a": str(n), "b": "1"})
            await asyncio.sleep(0.2)
            await gateway.triggers.measure_lag()
            metrics = (await http.get("/metrics")).text
            assert metric(metrics, "toolmesh_trigger_lag_messages", "sums") == 5
            assert 0.2 <= metric(metrics, "toolmesh_trigger_oldest_pending_seconds", "sums") < 30
            (listed,) = (await http.get("/v1/admin/triggers")).json()["triggers"]
            assert listed["waiting"] == 5 and listed["oldest_waiting_seconds"] >= 0.2  # triggers list
            await gateway.triggers.service.set_paused("sums", False)
            assert len(await trigger_jobs(gateway, 5 * (round_ + 1))) == 5 * (round_ + 1)
            await asyncio.sleep(0.3)
            await gateway.triggers.measure_lag()
            metrics = (await http.get("/metrics")).text
            assert metric(metrics, "toolmesh_trigger_lag_messages", "sums") == 0
            assert metric(metrics, "toolmesh_trigger_oldest_pending_seconds", "sums") == 0
            await gateway.triggers.service.set_paused("sums", True)
            await asyncio.sleep(1.5)
