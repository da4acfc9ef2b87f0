"""Reading a pod's changed functions, again when it fails: a pod that said its functions changed
may be too busy to list them (a full event loop, its server still answering `tools/list`), and
nothing would ask again until its next change. Attempts are bounded, with backoff in between."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from toolmesh.errors import ToolmeshError

log = logging.getLogger("toolmesh.pool")

#: Attempts to read a pod's changed functions before giving up until its next change.
LISTING_ATTEMPTS = 6
#: The wait before the second attempt, doubled each time, capped.
LISTING_BACKOFF_FIRST = 0.1
LISTING_BACKOFF_MAX = 2.0

T = TypeVar("T")


class ListingMissed(Exception):
    """An attempt that got an answer, but not the listing wanted (another pod's)."""


def backoff(attempt: int, first: float = LISTING_BACKOFF_FIRST) -> float:
    """The wait after failed attempt number `attempt` (1, 2, ...)."""
    return float(min(first * 2.0 ** (attempt - 1), LISTING_BACKOFF_MAX))


async def read_with_retries(
    read: Callable[[], Awaitable[T]],
    runtime: str,
    what: str,
    *,
    wanted: Callable[[], bool] = lambda: True,
    attempts: int = LISTING_ATTEMPTS,
    first: float = LISTING_BACKOFF_FIRST,
) -> T | None:
    """`read()`'s answer, trying up to `attempts` times while `wanted()`; None when every
    attempt failed (logged: `what` names what was read) or it is no longer wanted."""
    for attempt in range(1, attempts + 1):
        if not wanted():
            return None
        try:
            return await read()
        except (ToolmeshError, ListingMissed) as exc:
            reason = exc.message if isinstance(exc, ToolmeshError) else str(exc)
            last = attempt == attempts
            log.warning(
                f"runtime {runtime!r}: could not read {what} (attempt {attempt} of {attempts}): {reason}"
                + ("; giving up until it changes again" if last else ""),
                extra={"runtime": runtime},
            )
            if last:
                return None
        await asyncio.sleep(backoff(attempt, first))
    return None
