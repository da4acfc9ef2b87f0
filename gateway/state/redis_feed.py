"""Catalog changes fanned out through Redis pub/sub, to every gateway replica.

One channel, `<prefix>catalog`: a catalog change is the message ``tools``, a resource update
``resource:<uri>``, a change of a function's learned router examples ``learned:<function>``
(published by redis_learning.py's scripts). A replica whose catalog changed publishes on it; each replica
(the publisher too) keeps one subscription open in a background task and tells its listeners
(its MCP listen streams) of every message, so each stream hears each change once, whichever
replica it is connected to. When Redis goes away the task logs it, waits and subscribes again,
for as long as the gateway runs; changes published meanwhile reach only the publisher's own
listeners (it falls back to telling them directly).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import redis.asyncio as redis
from redis.exceptions import RedisError

from toolmesh.errors import StateUnavailable
from toolmesh.gateway.state.feed import (
    Listener,
    Listeners,
    UpdateListener,
    add_update_listener,
    notify_updates,
)
from toolmesh.gateway.state.redis_client import Outage

log = logging.getLogger("toolmesh.gateway")

#: Seconds between two attempts to subscribe again while Redis is away.
RESUBSCRIBE_DELAY = 1.0
CATALOG_MESSAGE = b"tools"
UPDATE_PREFIX = b"resource:"
LEARNED_PREFIX = b"learned:"


def feed_channel(prefix: str) -> str:
    return f"{prefix}catalog"


class RedisFeed:
    def __init__(self, client: redis.Redis, prefix: str, outage: Outage) -> None:
        self._client = client
        self._channel = feed_channel(prefix)
        self._outage = outage
        self._listeners = Listeners()
        self._updates: dict[object, UpdateListener] = {}
        self._learned: dict[object, UpdateListener] = {}
        self._task: asyncio.Task[None] | None = None
        #: Set while the subscription is open (tests wait for it).
        self.subscribed = asyncio.Event()

    async def publish(self) -> None:
        try:
            with self._outage.translated():
                await self._client.publish(self._channel, CATALOG_MESSAGE)
        except StateUnavailable as exc:
            log.warning(f"catalog change not fanned out to other replicas: {exc.message}")
            self._listeners.notify()

    def listen(self, listener: Listener) -> Callable[[], None]:
        self._follow_once()
        return self._listeners.add(listener)

    async def publish_update(self, uri: str) -> None:
        try:
            with self._outage.translated():
                await self._client.publish(self._channel, UPDATE_PREFIX + uri.encode())
        except StateUnavailable as exc:
            log.warning(f"resource update not fanned out to other replicas: {exc.message}")
            notify_updates(self._updates, uri)

    def listen_updates(self, listener: UpdateListener) -> Callable[[], None]:
        self._follow_once()
        return add_update_listener(self._updates, listener)

    def listen_learned(self, listener: UpdateListener) -> Callable[[], None]:
        self._follow_once()
        return add_update_listener(self._learned, listener)

    def _follow_once(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._follow(), name="state-feed")

    async def _follow(self) -> None:
        while True:
            try:
                async with self._client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self._channel)
                    self.subscribed.set()
                    self._outage.succeeded()
                    # No timeout: a subscription waits for as long as nothing changes.
                    async for message in pubsub.listen():
                        if message.get("type") != "message":
                            continue
                        self._dispatch(message.get("data", b""))
            except (RedisError, OSError) as exc:
                self.subscribed.clear()
                self._outage.failed(exc)
            await asyncio.sleep(RESUBSCRIBE_DELAY)

    def _dispatch(self, data: object) -> None:
        if not isinstance(data, bytes):
            self._listeners.notify()
        elif data.startswith(UPDATE_PREFIX):
            notify_updates(self._updates, data[len(UPDATE_PREFIX) :].decode(errors="replace"))
        elif data.startswith(LEARNED_PREFIX):
            notify_updates(self._learned, data[len(LEARNED_PREFIX) :].decode(errors="replace"))
        else:
            self._listeners.notify()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
