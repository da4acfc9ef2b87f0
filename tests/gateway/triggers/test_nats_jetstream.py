"""NATS JetStream: each message is one job (its JSON object as the arguments), acknowledged once
recorded; a bad message is a dead job and the consumer goes on; two gateways share the durable
consumer, each message once; what a dead consumer left unacknowledged is delivered again and run.
Real gateways, real `nats-server -js`, real redis-server for the shared job store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import nats
import pytest
from nats.js import JetStreamContext

from tests.gateway.conftest import StartGateway, finished, wait_job
from tests.gateway.state.conftest import RedisServer
from tests.gateway.triggers.conftest import NatsServer
from tests.gateway.triggers.test_redis_streams import metric, trigger_jobs
from toolmesh.config import StateConfig
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.server import Gateway


def echo(url: str, **more: object) -> TriggerConfig:
    return TriggerConfig(name="orders-nats", function="echo", nats_url=url, nats_subject="orders.new", **more)


def add(url: str) -> TriggerConfig:
    return TriggerConfig(name="sums", function="add", nats_url=url, nats_subject="sums", claim_after=1.0)


@pytest.fixture
async def js(nats_server: NatsServer) -> AsyncIterator[JetStreamContext]:
    nc = await nats.connect(nats_server.url)
    yield nc.jetstream()
    await nc.close()


def durable_of(gateway: Gateway, trigger: str) -> str:
    assert gateway.triggers is not None
    (reader,) = [r for r in gateway.triggers.readers if r.trigger.name == trigger]
    return str(reader.durable)  # type: ignore[attr-defined]


async def consumer_ready(js: JetStreamContext, stream: str, durable: str) -> None:
    for _ in range(200):
        try:
            await js.consumer_info(stream, durable)
            return
        except nats.js.errors.NotFoundError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"no consumer {durable} on {stream}")


async def unacknowledged(js: JetStreamContext, stream: str, durable: str) -> int:
    info = await js.consumer_info(stream, durable)
    return int(info.num_ack_pending or 0) + int(info.num_pending or 0)


async def test_messages_are_jobs_and_a_stream_is_made_when_none_captures_the_subject(
    gateway_factory: StartGateway, nats_server: NatsServer, js: JetStreamContext
) -> None:
    await js.add_stream(name="SUMS", subjects=["sums", "other"])  # captures `sums` already
    gateway = await gateway_factory(triggers=[echo(nats_server.url), add(nats_server.url)])
    await consumer_ready(js, "toolmesh_orders-nats", durable_of(gateway, "orders-nats"))
    await consumer_ready(js, "SUMS", durable_of(gateway, "sums"))
    await js.publish("orders.new", json.dumps({"text": "order 1"}).encode())
    await js.publish("sums", b'{"a": 10, "b": 20}')
    jobs = await trigger_jobs(gateway, 2)
    assert len(jobs) == 2
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        results = [await wait_job(http, job["id"], finished) for job in jobs]
    assert all(r["status"] == "succeeded" for r in results), results
    text = " ".join(str(r["result"]) for r in results)
    assert "order 1" in text and "30" in text
    assert {r["request_id"].split(":")[0] for r in results} == {"nats"}
    assert (await js.stream_info("toolmesh_orders-nats")).config.subjects == ["orders.new"]
    durable = durable_of(gateway, "orders-nats")
    assert await unacknowledged(js, "toolmesh_orders-nats", durable) == 0


async def test_a_bad_message_is_a_dead_job_and_the_consumer_goes_on(
    gateway_factory: StartGateway, nats_server: NatsServer, js: JetStreamContext
) -> None:
    gateway = await gateway_factory(triggers=[add(nats_server.url)])
    durable = durable_of(gateway, "sums")
    await consumer_ready(js, "toolmesh_sums", durable)
    for _round in range(3):  # in a loop: the consumer is never stuck behind one
        await js.publish("sums", b"{not json")
        await js.publish("sums", b'{"a": "two", "b": 1}')
        await js.publish("sums", b"[1, 2]")
        await js.publish("sums", b'{"a": 1, "b": 1}')
    jobs = await trigger_jobs(gateway, 12)
    statuses = [job["status"] for job in jobs]
    assert len(jobs) == 12 and statuses.count("dead") == 9, jobs
    assert any("not JSON" in job["error"]["message"] for job in jobs if job["status"] == "dead")
    await asyncio.sleep(0.3)
    assert await unacknowledged(js, "toolmesh_sums", durable) == 0


async def test_two_gateways_share_the_consumer_each_message_once(
    gateway_factory: StartGateway, nats_server: NatsServer, redis_server: RedisServer, js: JetStreamContext
) -> None:
    state = StateConfig(url=redis_server.url)
    first = await gateway_factory(triggers=[echo(nats_server.url)], state=state)
    await gateway_factory(triggers=[echo(nats_server.url)], state=state)
    await consumer_ready(js, "toolmesh_orders-nats", durable_of(first, "orders-nats"))
    acks = [await js.publish("orders.new", json.dumps({"text": f"order {i}"}).encode()) for i in range(300)]
    jobs = await trigger_jobs(first, 300)
    await asyncio.sleep(0.5)
    jobs = await trigger_jobs(first, 301, timeout=0.1)  # and not one more
    sources = sorted(job["request_id"] for job in jobs)
    assert len(sources) == 300 and len(set(sources)) == 300
    assert set(sources) == {f"nats:toolmesh_orders-nats:{ack.seq}" for ack in acks}


async def test_a_dead_consumers_messages_are_delivered_again_and_run(
    gateway_factory: StartGateway, nats_server: NatsServer, js: JetStreamContext
) -> None:
    gateway = await gateway_factory(triggers=[add(nats_server.url)])
    durable = durable_of(gateway, "sums")
    await consumer_ready(js, "toolmesh_sums", durable)
    assert gateway.triggers is not None
    for round_ in range(2):
        # A gateway that pulled a batch and died before acknowledging it (this one is paused
        # meanwhile, so only the dead one pulls).
        await gateway.triggers.service.set_paused("sums", True)
        await asyncio.sleep(2.5)
        for n in range(5):
            await js.publish("sums", json.dumps({"a": n, "b": 100 * round_}).encode())
        died = await js.pull_subscribe("sums", durable=durable, stream="toolmesh_sums")
        assert len(await died.fetch(10, timeout=2)) == 5
        await died.unsubscribe()
        await gateway.triggers.service.set_paused("sums", False)
        jobs = await trigger_jobs(gateway, 5 * (round_ + 1), timeout=20)
        assert len(jobs) == 5 * (round_ + 1)
    await asyncio.sleep(0.3)
    assert await unacknowledged(js, "toolmesh_sums", durable) == 0


async def test_the_server_away_then_back_loses_nothing(
    gateway_factory: StartGateway, nats_server: NatsServer
) -> None:
    gateway = await gateway_factory(triggers=[add(nats_server.url)])
    nc = await nats.connect(nats_server.url)
    await consumer_ready(nc.jetstream(), "toolmesh_sums", durable_of(gateway, "sums"))
    await nc.close()
    total = 0
    for round_ in range(2):
        nats_server.stop()
        await asyncio.sleep(1.0)
        nats_server.start()
        nc = await nats.connect(nats_server.url)
        for n in range(10):
            await nc.jetstream().publish("sums", json.dumps({"a": n, "b": round_}).encode())
        await nc.close()
        total += 10
        jobs = await trigger_jobs(gateway, total, timeout=30)
        assert len(jobs) == total


async def test_lag_and_the_oldest_pending_age_are_metrics(
    gateway_factory: StartGateway, nats_server: NatsServer, js: JetStreamContext
) -> None:
    gateway = await gateway_factory(triggers=[add(nats_server.url)])
    assert gateway.triggers is not None
    await consumer_ready(js, "toolmesh_sums", durable_of(gateway, "sums"))
    await gateway.triggers.service.set_paused("sums", True)
    await asyncio.sleep(2.5)  # the pull under way is over
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        for round_ in range(2):
            for n in range(5):
                await js.publish("sums", json.dumps({"a": n, "b": 1}).encode())
            await asyncio.sleep(0.2)
            await gateway.triggers.measure_lag()
            metrics = (await http.get("/metrics")).text
            assert metric(metrics, "toolmesh_trigger_lag_messages", "sums") == 5
            assert 0.1 <= metric(metrics, "toolmesh_trigger_oldest_pending_seconds", "sums") < 30
            await gateway.triggers.service.set_paused("sums", False)
            assert len(await trigger_jobs(gateway, 5 * (round_ + 1))) == 5 * (round_ + 1)
            await asyncio.sleep(0.3)
            await gateway.triggers.measure_lag()
            metrics = (await http.get("/metrics")).text
            assert metric(metrics, "toolmesh_trigger_lag_messages", "sums") == 0
            assert metric(metrics, "toolmesh_trigger_oldest_pending_seconds", "sums") == 0
            await gateway.triggers.service.set_paused("sums", True)
            await asyncio.sleep(2.5)


async def test_a_clean_shutdown_leaves_nothing_half_acknowledged(
    gateway_factory: StartGateway, nats_server: NatsServer, redis_server: RedisServer, js: JetStreamContext
) -> None:
    state = StateConfig(url=redis_server.url)
    total = 0
    for _round in range(2):
        first = await gateway_factory(triggers=[echo(nats_server.url)], state=state)
        durable = durable_of(first, "orders-nats")
        await consumer_ready(js, "toolmesh_orders-nats", durable)
        for i in range(300):
            await js.publish("orders.new", json.dumps({"text": f"order {i}"}).encode())
        total += 300
        assert first.triggers is not None
        await first.triggers.stop()  # as at shutdown, mid-stream
        info = await js.consumer_info("toolmesh_orders-nats", durable)
        assert info.num_ack_pending == 0, "a message read but neither recorded nor left to another"
        # The rest waits for the next gateway: each message once, none lost.
        second = await gateway_factory(triggers=[echo(nats_server.url)], state=state)
        jobs = await trigger_jobs(second, total, timeout=30)
        assert len(jobs) == total and len({j["request_id"] for j in jobs}) == total
        await second.triggers.stop()  # type: ignore[union-attr]
