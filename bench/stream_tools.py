"""Functions bench/stream_latency.py streams: each item carries the wall-clock time it was yielded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator


async def stamps(count: int, pause: float) -> AsyncIterator[dict[str, float]]:
    """Yield `count` items `pause` seconds apart, each stamped with time.time() as it is yielded."""
    for index in range(count):
        yield {"index": index, "yielded_at": time.time()}
        await asyncio.sleep(pause)
