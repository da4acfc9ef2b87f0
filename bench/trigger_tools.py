"""The function bench/triggers.py's stream entries call: it says when it started."""

from __future__ import annotations

import time


async def started(sent: float = 0.0, n: int = 0) -> float:
    """The wall-clock time this call began (the entry carries when it was sent)."""
    return time.time()
