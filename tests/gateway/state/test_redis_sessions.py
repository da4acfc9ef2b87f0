"""Router sessions in a real redis-server: what one gateway records another reads, with the
SQLite store's bounds (turns kept, TTL from the last turn)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as redis

from tests.gateway.state.conftest import RedisServer
from toolmesh.errors import StateUnavailable
from toolmesh.gateway.state.redis_client import Outage, connect
from toolmesh.gateway.state.redis_sessions import RedisSessions
from toolmesh.router.sessions import MAX_RESULT_CHARS

OpenSessions = Callable[..., Awaitable[RedisSessions]]


@pytest.fixture
async def open_sessions(redis_server: RedisServer) -> AsyncIterator[OpenSessions]:
    clients: list[redis.Redis] = []

    async def open_one(ttl: float = 60, max_turns: int = 3) -> RedisSessions:
        client = connect(redis_server.url, timeout=1.0)
        clients.append(client)
        loop = asyncio.get_running_loop()
        outage = Outage(redis_server.url)
        return RedisSessions(client, loop, "test:", outage, ttl=ttl, max_turns=max_turns, timeout=1.0)

    yield open_one
    for client in clients:
        await client.aclose()


async def test_a_session_recorded_through_one_gateway_is_read_through_another(
    open_sessions: OpenSessions,
) -> None:
    first, second = await open_sessions(), await open_sessions()
    # The router calls its store from worker threads, as here.
    await asyncio.to_thread(
        first.record, "trip", "weather in Oslo", "get_weather", {"city": "Oslo"}, {"t": 7}
    )
    await asyncio.to_thread(second.record, "trip", "and Paris?", "get_weather", {"city": "Paris"}, None)
    turns = await asyncio.to_thread(second.history, "trip")
    assert [(t.prompt, t.function, t.arguments, t.result) for t in turns] == [
        ("weather in Oslo", "get_weather", {"city": "Oslo"}, {"t": 7}),
        ("and Paris?", "get_weather", {"city": "Paris"}, None),
    ]
    assert turns[0].at <= turns[1].at
    assert await asyncio.to_thread(first.history, "trip", 1) == turns[1:]
    assert await asyncio.to_thread(first.history, "unknown") == []


async def test_only_the_last_turns_are_kept_and_big_results_are_trimmed(open_sessions: OpenSessions) -> None:
    sessions = await open_sessions(max_turns=3)
    for n in range(5):
        await asyncio.to_thread(sessions.record, "s", f"prompt {n}", None, {}, "x" * (MAX_RESULT_CHARS + n))
    turns = await asyncio.to_thread(sessions.history, "s")
    assert [t.prompt for t in turns] == ["prompt 2", "prompt 3", "prompt 4"]
    assert set(turns[0].result) == {"truncated"} and len(turns[0].result["truncated"]) == MAX_RESULT_CHARS


async def test_a_session_expires_ttl_after_its_last_turn(open_sessions: OpenSessions) -> None:
    sessions = await open_sessions(ttl=0.5)
    await asyncio.to_thread(sessions.record, "s", "one", None, {}, None)
    await asyncio.sleep(0.3)
    await asyncio.to_thread(sessions.record, "s", "two", None, {}, None)  # the TTL starts again
    await asyncio.sleep(0.3)
    assert len(await asyncio.to_thread(sessions.history, "s")) == 2
    await asyncio.sleep(0.4)
    assert await asyncio.to_thread(sessions.history, "s") == []


async def test_on_the_event_loop_it_refuses_instead_of_deadlocking(open_sessions: OpenSessions) -> None:
    sessions = await open_sessions()
    with pytest.raises(RuntimeError, match="worker threads"):
        sessions.history("s")


async def test_redis_away_is_state_unavailable(
    open_sessions: OpenSessions, redis_server: RedisServer
) -> None:
    sessions = await open_sessions()
    redis_server.stop()
    with pytest.raises(StateUnavailable):
        await asyncio.to_thread(sessions.history, "s")
    with pytest.raises(StateUnavailable):
        await asyncio.to_thread(sessions.record, "s", "p", None, {}, None)
    redis_server.start()
    await asyncio.to_thread(sessions.record, "s", "p", None, {}, None)
    assert len(await asyncio.to_thread(sessions.history, "s")) == 1
