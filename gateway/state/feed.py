"""Catalog-change and resource-update fan-out: the seam, and the local feed.

A replica whose catalog changed (a reload) `publish`es; every listener hears it, once. Locally
that is this process's listeners (the MCP endpoint's listen streams). In Redis
(`redis_feed.py`) it is every replica's listeners, the publisher's own included. A resource
update (`publish_update(uri)`, from a function's `ctx.resource_updated`) travels the same way
to the `listen_updates` listeners, with its URI. Where the router's learned examples are shared
(Redis), `listen_learned` hears which function's examples another replica changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

Listener = Callable[[], None]
UpdateListener = Callable[[str], None]


class ChangeFeed(Protocol):
    async def publish(self) -> None:
        """Tell every listener (of every replica sharing the feed) that the catalog changed."""
        ...

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` on the event loop at each change; returns a function that stops it."""
        ...

    async def publish_update(self, uri: str) -> None:
        """Tell every update listener (of every replica sharing the feed) that `uri` changed."""
        ...

    def listen_updates(self, listener: UpdateListener) -> Callable[[], None]:
        """Call `listener` with each updated URI; returns a function that stops it."""
        ...

    def listen_learned(self, listener: UpdateListener) -> Callable[[], None]:
        """Call `listener` with each function whose shared learned examples changed."""
        ...


class Listeners:
    """The listeners of one process, called one by one; one that raises does not stop the rest."""

    def __init__(self) -> None:
        self._listeners: dict[object, Listener] = {}

    def add(self, listener: Listener) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None

    def __len__(self) -> int:
        return len(self._listeners)

    def notify(self) -> None:
        for listener in list(self._listeners.values()):
            listener()


class LocalFeed:
    """This process's listeners only: one gateway."""

    def __init__(self) -> None:
        self._listeners = Listeners()
        self._updates: dict[object, UpdateListener] = {}

    async def publish(self) -> None:
        self._listeners.notify()

    def listen(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.add(listener)

    async def publish_update(self, uri: str) -> None:
        notify_updates(self._updates, uri)

    def listen_updates(self, listener: UpdateListener) -> Callable[[], None]:
        return add_update_listener(self._updates, listener)

    def listen_learned(self, listener: UpdateListener) -> Callable[[], None]:
        """One gateway's learned examples are its own (SQLite): nothing to hear."""
        return lambda: None


def add_update_listener(
    listeners: dict[object, UpdateListener], listener: UpdateListener
) -> Callable[[], None]:
    token = object()
    listeners[token] = listener
    return lambda: listeners.pop(token, None) and None


def notify_updates(listeners: dict[object, UpdateListener], uri: str) -> None:
    for listener in list(listeners.values()):
        listener(uri)
