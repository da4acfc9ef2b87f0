"""One runtime loaded in the background: a source whose functions come from outside the gateway (a
stdio MCP server's listing, a remote MCP server, an OpenAPI document by URL, gRPC reflection).

Its `attempt` loads it and puts it in service, or raises why it cannot. It runs at once, and after
a failure again once the backoff has passed (backoff.py), until one succeeds; a reload asks for an
attempt at once (`try_now`), or waits for the one under way: never two at once. The first failure
and the recovery are logged, not every attempt. Until it has loaded, `loading` says what a call to
it is told (a retryable 503, see core/catalog.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from toolmesh.errors import ToolmeshError
from toolmesh.gateway.core.backend import Loading
from toolmesh.gateway.pool.startup.backoff import Backoff

log = logging.getLogger("toolmesh.pool")

#: The Retry-After of a call to a runtime whose attempt is under way (its first, or a retry).
STARTING_RETRY_AFTER = 1.0

Attempt = Callable[[], Awaitable[None]]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ToolmeshError):
        return exc.message
    return str(exc) or type(exc).__name__


def _retrieved(outcome: asyncio.Future[None]) -> None:
    # A failure nobody awaits any more (the reload that asked was cancelled) is not an error.
    if not outcome.cancelled():
        outcome.exception()


class BackgroundLoad:
    """`runtime` loading in the background until `attempt` succeeds; then `joined` is called."""

    def __init__(
        self, runtime: str, attempt: Attempt, joined: Callable[[], None], backoff: Backoff | None = None
    ) -> None:
        self.runtime = runtime
        self._attempt = attempt
        self._joined = joined
        self._backoff = backoff or Backoff()
        #: Why the last attempt failed (None before one has, and once it has loaded).
        self.error: str | None = None
        #: Whether it has loaded (and so is in service).
        self.loaded = False
        #: Set once the first attempt has ended, either way (start-up waits for it, a little).
        self.tried = asyncio.Event()
        self._attempting = False
        #: When the next attempt starts (event loop time), while it waits for one.
        self._next_try = 0.0
        #: The outcome of the attempt under way or the next one, for whoever asked (`try_now`).
        self._outcome: asyncio.Future[None] | None = None
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"load runtime {runtime}")

    @property
    def loading(self) -> Loading:
        """What a call to the runtime is told while it has not loaded."""
        if self.error is None:
            return Loading(f"runtime {self.runtime!r} is still starting", STARTING_RETRY_AFTER)
        wait = STARTING_RETRY_AFTER
        if not self._attempting:
            wait = max(wait, self._next_try - asyncio.get_running_loop().time())
        return Loading(f"{self.error} (it is tried again in the background)", wait)

    async def try_now(self) -> None:
        """Try to load it at once, or wait for the attempt under way; raise why it failed."""
        if self.loaded:
            return
        if self._outcome is None:
            self._outcome = asyncio.get_running_loop().create_future()
            self._outcome.add_done_callback(_retrieved)
        outcome = self._outcome
        if not self._attempting:
            self._wake.set()
        await asyncio.shield(outcome)

    async def cancel(self) -> None:
        """Stop loading it: the attempt under way is cancelled (and cleans up after itself)."""
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        if self._outcome is not None:
            self._outcome.cancel()

    async def _run(self) -> None:
        delays = self._backoff.delays()
        while True:
            self._attempting = True
            try:
                await self._attempt()
            except Exception as exc:
                self._attempting = False
                self._failed(exc)
                delay = next(delays)
                self._next_try = asyncio.get_running_loop().time() + delay
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                self._wake.clear()
                continue
            self._attempting = False
            self._loaded()
            return

    def _failed(self, exc: Exception) -> None:
        first = self.error is None
        self.error = _reason(exc)
        if first:
            log.error(
                "%s; it serves no functions until it loads, tried again in the background",
                self.error,
                extra={"runtime": self.runtime},
            )
        else:
            log.debug("runtime %r failed to load again: %s", self.runtime, self.error)
        self.tried.set()
        outcome, self._outcome = self._outcome, None
        if outcome is not None and not outcome.done():
            outcome.set_exception(exc)

    def _loaded(self) -> None:
        self.loaded = True
        if self.error is not None:
            log.info(
                "runtime %r has loaded after all (it failed: %s)",
                self.runtime,
                self.error,
                extra={"runtime": self.runtime},
            )
        self.error = None
        self.tried.set()
        outcome, self._outcome = self._outcome, None
        if outcome is not None and not outcome.done():
            outcome.set_result(None)
        self._joined()
