"""Redis commands for code that runs on worker threads (the router's), sent through the loop.

The gateway has one Redis client and connection pool, on its event loop. The router calls its
stores from its own threads (as it calls SQLite, off the loop), so a store in Redis hands each
command to the loop and waits for the answer, at most Redis' own timeout and a margin.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from toolmesh.errors import StateUnavailable
from toolmesh.gateway.state.redis_client import Outage

log = logging.getLogger("toolmesh.gateway")

T = TypeVar("T")


class LoopCalls:
    def __init__(self, loop: asyncio.AbstractEventLoop, outage: Outage, timeout: float) -> None:
        self.loop = loop
        self.outage = outage
        #: How long a worker waits for the loop's answer: Redis' own timeout, and a margin.
        self._wait = timeout + 1.0

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """`work`'s result, from a worker thread; StateUnavailable when Redis does not answer."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            work.close()
            raise RuntimeError("a Redis store is called from worker threads, not on its event loop")
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        try:
            return future.result(self._wait)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise self.outage.failed(exc) from None

    def start(self, work: Coroutine[Any, Any, None], what: str) -> None:
        """Run `work` on the loop without waiting for it; a Redis outage is logged, not raised."""

        def done(future: concurrent.futures.Future[None]) -> None:
            if not future.cancelled() and isinstance(future.exception(), StateUnavailable):
                log.warning(f"{what}: the shared state cannot be reached")

        asyncio.run_coroutine_threadsafe(work, self.loop).add_done_callback(done)
