"""Functions the runtime benchmark calls: they do nothing, so only the pod's overhead is measured."""

from __future__ import annotations


async def noop() -> None:
    """Return nothing, on the event loop."""


def noop_sync() -> None:
    """Return nothing, in a worker thread."""
