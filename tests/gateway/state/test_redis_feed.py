"""Catalog changes through Redis pub/sub: every replica's listeners hear each change once, and
the subscription comes back by itself after Redis does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as redis

from tests.gateway.state.conftest import RedisServer
from toolmesh.gateway.state import redis_feed
from toolmesh.gateway.state.feed import LocalFeed
from toolmesh.gateway.state.redis_client import Outage, connect
from toolmesh.gateway.state.redis_feed import RedisFeed

OpenFeed = Callable[[], Awaitable[tuple[RedisFeed, list[int]]]]


@pytest.fixture
async def open_feed(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenFeed]:
    """A feed on a client of its own (one per replica) and the count of what its listener heard."""
    monkeypatch.setattr(redis_feed, "RESUBSCRIBE_DELAY", 0.1)
    made: list[tuple[RedisFeed, redis.Redis]] = []

    async def open_one() -> tuple[RedisFeed, list[int]]:
        client = connect(redis_server.url, timeout=1.0)
        feed = RedisFeed(client, "test:", Outage(redis_server.url))
        made.append((feed, client))
        heard = [0]
        feed.listen(lambda: heard.__setitem__(0, heard[0] + 1))
        async with asyncio.timeout(5):
            await feed.subscribed.wait()
        return feed, heard

    yield open_one
    for feed, client in made:
        await feed.aclose()
        await client.aclose()


async def until(check: Callable[[], bool]) -> None:
    """Poll `check` (state that changes in another task, with no event to wait on)."""
    async with asyncio.timeout(5):
        while not check():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_a_change_published_by_one_replica_reaches_every_replica_once(open_feed: OpenFeed) -> None:
    (first, heard_first), (_, heard_second) = await open_feed(), await open_feed()
    await first.publish()
    await until(lambda: heard_first == [1] and heard_second == [1])
    await asyncio.sleep(0.1)
    assert heard_first == [1] and heard_second == [1]


async def test_with_redis_away_the_publisher_still_tells_its_own_listeners_and_all_recover(
    open_feed: OpenFeed, redis_server: RedisServer
) -> None:
    (first, heard_first), (second, heard_second) = await open_feed(), await open_feed()
    redis_server.stop()
    await until(lambda: not first.subscribed.is_set() and not second.subscribed.is_set())
    await first.publish()
    assert heard_first == [1] and heard_second == [0]
    redis_server.start()
    await until(lambda: first.subscribed.is_set() and second.subscribed.is_set())
    await second.publish()
    await until(lambda: heard_first == [2] and heard_second == [1])


async def test_the_local_feed_tells_this_process_only() -> None:
    feed, heard = LocalFeed(), []
    stop = feed.listen(lambda: heard.append(1))
    await feed.publish()
    stop()
    await feed.publish()
    assert heard == [1]


async def test_a_resource_update_reaches_every_replica_with_its_uri_and_is_not_a_catalog_change(
    open_feed: OpenFeed,
) -> None:
    (first, heard_first), (second, heard_second) = await open_feed(), await open_feed()
    uris: list[str] = []
    first.listen_updates(uris.append)
    second.listen_updates(uris.append)
    await second.publish_update("mem://users/ada/profile")
    await until(lambda: len(uris) == 2)
    await asyncio.sleep(0.1)
    assert uris == ["mem://users/ada/profile"] * 2
    assert heard_first == [0] and heard_second == [0]


async def test_the_local_feed_passes_resource_updates_to_this_process() -> None:
    feed = LocalFeed()
    uris: list[str] = []
    stop = feed.listen_updates(uris.append)
    await feed.publish_update("a://b")
    stop()
    await feed.publish_update("a://c")
    assert uris == ["a://b"]
