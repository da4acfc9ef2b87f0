"""How long a source that failed to load waits before it is tried again: 1 s, doubling, at most 60 s.

A remote server or document that comes up later joins within a minute of it, and one that stays
down costs an attempt a minute, never a tight loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

#: Seconds before the first retry.
FIRST_RETRY = 1.0
#: Seconds between retries at most.
LONGEST_RETRY = 60.0


@dataclass(frozen=True, slots=True)
class Backoff:
    first: float = FIRST_RETRY
    longest: float = LONGEST_RETRY

    def delays(self) -> Iterator[float]:
        """The waits before each retry, in order: `first`, doubling up to `longest`, forever."""
        delay = self.first
        while True:
            yield delay
            delay = min(delay * 2, self.longest)
