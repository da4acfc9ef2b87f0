"""The token bucket in Redis against a real redis-server: the local bucket's semantics, shared
and atomic across clients, failing closed while Redis is away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as redis

from tests.gateway.state.conftest import RedisServer
from toolmesh.errors import StateUnavailable
from toolmesh.gateway.state.limits import LocalLimits, RateLimits
from toolmesh.gateway.state.redis_client import Outage, connect
from toolmesh.gateway.state.redis_limits import RedisLimits

PREFIX = "test:"
OpenLimits = Callable[[], Awaitable[RateLimits]]


@pytest.fixture
async def redis_limits(redis_server: RedisServer) -> AsyncIterator[OpenLimits]:
    """Opens RedisLimits on a client of its own each time, as another gateway would."""
    clients: list[redis.Redis] = []

    async def open_limits() -> RateLimits:
        client = connect(redis_server.url, timeout=1.0)
        clients.append(client)
        return RedisLimits(client, PREFIX, Outage(redis_server.url))

    yield open_limits
    for client in clients:
        await client.aclose()


@pytest.mark.parametrize("where", ["local", "redis"])
async def test_a_bucket_allows_its_burst_then_says_how_long_to_wait(
    where: str, redis_limits: OpenLimits
) -> None:
    limits = LocalLimits() if where == "local" else await redis_limits()
    bucket = limits.bucket("ci", rate=10, burst=3)
    assert [await bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = await bucket.take()
    assert 0.05 < wait <= 0.1  # one token at 10/s, less what refilled since
    refused = await bucket.take()
    assert 0 < refused <= wait  # a refusal takes nothing: the wait only shrinks
    await asyncio.sleep(wait + 0.02)
    assert await bucket.take() == 0.0
    assert await bucket.take() > 0


async def test_two_gateways_share_one_bucket(redis_limits: OpenLimits) -> None:
    first, second = (await redis_limits()).bucket("ci", 0.01, 5), (await redis_limits()).bucket("ci", 0.01, 5)
    # Interleaved through two clients, as two replicas behind a load balancer would see it.
    taken = [await (first if i % 2 else second).take() == 0.0 for i in range(10)]
    assert taken == [True] * 5 + [False] * 5
    other_key = (await redis_limits()).bucket("other", 0.01, 5)
    assert await other_key.take() == 0.0


async def test_concurrent_takes_never_spend_a_token_twice(redis_limits: OpenLimits) -> None:
    buckets = [(await redis_limits()).bucket("race", 0.001, 20) for _ in range(3)]
    waits = await asyncio.gather(*(buckets[i % 3].take() for i in range(90)))
    assert sum(w == 0.0 for w in waits) == 20


async def test_an_idle_bucket_expires_once_it_would_be_full(
    redis_limits: OpenLimits, redis_server: RedisServer
) -> None:
    bucket = (await redis_limits()).bucket("idle", rate=2, burst=4)
    await bucket.take()
    async with redis.Redis.from_url(redis_server.url) as raw:
        ttl = await raw.pttl(f"{PREFIX}ratelimit:idle")
    # One token short refills in 0.5 s; the key lives that long plus a second's margin.
    assert 1000 < ttl <= 1500


async def test_a_restarted_redis_loses_the_script_and_the_bucket_still_works(
    redis_limits: OpenLimits, redis_server: RedisServer
) -> None:
    bucket = (await redis_limits()).bucket("ci", 10, 2)
    assert await bucket.take() == 0.0
    async with redis.Redis.from_url(redis_server.url) as raw:
        await raw.script_flush()
    assert await bucket.take() == 0.0
    assert await bucket.take() > 0


async def test_redis_away_refuses_with_503_then_recovers(
    redis_limits: OpenLimits, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    bucket = (await redis_limits()).bucket("ci", 100, 100)
    assert await bucket.take() == 0.0
    redis_server.stop()
    for _ in range(3):
        with pytest.raises(StateUnavailable) as refused:
            await bucket.take()
    assert refused.value.http_status == 503 and refused.value.retry_after == 1.0
    assert "Redis" in refused.value.message
    # The outage is logged once, not once per request.
    assert len([r for r in caplog.records if "shared state unreachable" in r.getMessage()]) == 1
    redis_server.start()
    assert await bucket.take() == 0.0
    assert any("reachable again" in r.getMessage() for r in caplog.records)
