"""Catalog-change fan-out: the seam, and the local feed.

A replica whose catalog changed (a reload) `publish`es; every listener hears it, once. Locally
that is this process's listeners (the MCP endpoint's listen streams). In Redis
(`redis_feed.py`) it is every replica's listeners, the publisher's own included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

Listener = Callable[[], None]


class ChangeFeed(Protocol):
    async def publish(self) -> None:
        """Tell every listener (of every replica sharing the feed) that the catalog changed."""
        ...

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` on the event loop at each change; returns a function that stops it."""
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

    async def publish(self) -> None:
        self._listeners.notify()

    def listen(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.add(listener)
