"""The router's learned examples and routings in a real redis-server: the SQLite store's bounds,
shared by replicas, and each change announced on the state feed."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import redis.asyncio as redis

from tests.gateway.state.conftest import RedisServer, free_port
from tests.gateway.state.test_redis_feed import until
from toolmesh.cli import main
from toolmesh.errors import StateUnavailable
from toolmesh.gateway.state.loop_calls import LoopCalls
from toolmesh.gateway.state.redis_client import Outage, connect
from toolmesh.gateway.state.redis_feed import RedisFeed
from toolmesh.gateway.state.redis_learning import RedisExamples, RedisRoutings
from toolmesh.router.learning import MAX_LEARNED_CHARS, Routed

#: A store (one replica's) and what its feed heard: the functions whose examples changed.
OpenStore = Callable[..., Awaitable[tuple[RedisExamples, RedisRoutings, list[str]]]]


@pytest.fixture
async def open_store(redis_server: RedisServer) -> AsyncIterator[OpenStore]:
    made: list[tuple[RedisFeed, redis.Redis]] = []

    async def open_one(max_per_function: int = 20) -> tuple[RedisExamples, RedisRoutings, list[str]]:
        client = connect(redis_server.url, timeout=1.0)
        outage = Outage(redis_server.url)
        calls = LoopCalls(asyncio.get_running_loop(), outage, 1.0)
        feed = RedisFeed(client, "test:", outage)
        made.append((feed, client))
        heard: list[str] = []
        feed.listen_learned(heard.append)
        async with asyncio.timeout(5):
            await feed.subscribed.wait()
        store = RedisExamples(client, "test:", outage, calls, max_per_function=max_per_function)
        return store, RedisRoutings(client, "test:", calls), heard

    yield open_one
    for feed, client in made:
        await feed.aclose()
        await client.aclose()


async def test_the_store_keeps_the_newest_few_per_version_across_replicas(open_store: OpenStore) -> None:
    (first, _, heard), (second, _, _) = await open_store(max_per_function=3), await open_store(3)
    # The router calls its store from worker threads, as here; replicas take turns.
    for i in range(5):
        await asyncio.to_thread((first, second)[i % 2].add, "f", "v1", f"prompt {i}", "alice")
    assert await asyncio.to_thread(second.add, "f", "v1", "prompt  2\n", "bob") == [
        "prompt 2",
        "prompt 4",
        "prompt 3",
    ]
    await asyncio.to_thread(first.add, "f", "v0", "old wording", "carol")
    assert await asyncio.to_thread(first.current, {"f": "v1", "g": "v1"}) == {
        "f": ["prompt 2", "prompt 4", "prompt 3"]
    }
    assert await asyncio.to_thread(second.current, {"f": "v2"}) == {}
    listed = await asyncio.to_thread(second.listing, "f")
    assert [(row.version, row.prompt, row.principal) for row in listed] == [
        ("v0", "old wording", "carol"),
        ("v1", "prompt 2", "bob"),
        ("v1", "prompt 4", "alice"),
        ("v1", "prompt 3", "alice"),
    ]
    assert all(a.at >= b.at for a, b in itertools.pairwise(listed))
    assert await asyncio.to_thread(first.listing, "g") == []
    assert await asyncio.to_thread(first.remove, "f", "prompt 4") == 1
    assert await asyncio.to_thread(first.remove, "f", "prompt 4") == 0
    assert await asyncio.to_thread(second.remove, "f") == 3
    assert await first.alisting() == []
    # Every change (7 adds, 2 removals that removed something) was announced, with its function.
    await until(lambda: len(heard) == 9)
    assert set(heard) == {"f"}


async def test_listing_covers_every_function_and_long_prompts_are_cut(open_store: OpenStore) -> None:
    store, _, _ = await open_store()
    await store.aadd("b.fn", "v1", "x" * (MAX_LEARNED_CHARS + 50), "alice")
    await store.aadd("a:fn", "v9", "is it raining in Oslo", "bob")
    rows = await store.alisting()
    assert [(row.function, row.version) for row in rows] == [("a:fn", "v9"), ("b.fn", "v1")]
    assert len(rows[1].prompt) == MAX_LEARNED_CHARS


async def test_a_routing_remembered_by_one_replica_is_read_by_another(
    open_store: OpenStore, redis_server: RedisServer
) -> None:
    (store, first, _), (_, second, _) = await open_store(), await open_store()
    await asyncio.to_thread(first.remember, "r1", "parcels  left in the warehouse?", "tools.lookup")
    await asyncio.to_thread(first.remember, "r2", "hello there")
    # Remembering does not wait for Redis: the prompt arrives just after.
    async with asyncio.timeout(5):
        while None in (recalled := [await asyncio.to_thread(second.recall, r) for r in ("r1", "r2")]):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    assert recalled == [Routed("parcels left in the warehouse?", "tools.lookup"), Routed("hello there", None)]
    assert await asyncio.to_thread(second.recall, "unknown") is None
    # A routing remembered before matches were kept (the prompt alone): read, without a match.
    client = connect(redis_server.url, timeout=1.0)
    await client.set("test:routing:old", "weather in Oslo", ex=60)
    await client.aclose()
    assert await asyncio.to_thread(second.recall, "old") == Routed("weather in Oslo", None)
    # The feed announces Redis' changes: there is nothing for a router to look for before routing.
    await asyncio.to_thread(store.add, "f", "v1", "p", "alice")
    assert store.changed() == []


async def test_redis_away_fails_learning_and_lookups_but_never_a_routing(
    open_store: OpenStore, redis_server: RedisServer
) -> None:
    store, routings, _ = await open_store()
    redis_server.stop()
    with pytest.raises(StateUnavailable):
        await asyncio.to_thread(store.add, "f", "v1", "p", "alice")
    with pytest.raises(StateUnavailable):
        await asyncio.to_thread(store.current, {"f": "v1"})
    with pytest.raises(StateUnavailable):
        await asyncio.to_thread(routings.recall, "r1")
    await asyncio.to_thread(routings.remember, "r1", "p", "f")  # logged, not raised
    redis_server.start()
    assert await asyncio.to_thread(store.add, "f", "v1", "p", "alice") == ["p"]


def test_the_examples_command_says_when_the_shared_state_is_away_or_misnamed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "toolmesh.toml"
    config.write_text("")
    listing = ["router", "examples", "list", "--config", str(config)]
    # Nothing listens there: a clear line and exit 2, not a traceback.
    monkeypatch.setenv("TOOLMESH_STATE_URL", f"redis://127.0.0.1:{free_port()}/0")
    assert main(listing) == 2
    assert "shared state (Redis) cannot be reached" in capsys.readouterr().err
    monkeypatch.setenv("TOOLMESH_STATE_URL", "http://127.0.0.1:1/0")
    assert main(listing) == 2
    assert "is not a Redis URL" in capsys.readouterr().err
