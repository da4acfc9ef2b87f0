"""Rate limits: the seam (`RateLimits` hands out a `Bucket` per key) and the local implementation.

A bucket holds `burst` tokens, refilled at `rate` a second; each unit of work takes one. Taking
answers 0.0 when a token was there, else the seconds until one will be (Retry-After), and takes
none. The local buckets live in this process (one gateway); `redis_limits.py` keeps them in
Redis, shared by every replica, with the same arithmetic.
"""

from __future__ import annotations

import time
from typing import Protocol


class Bucket(Protocol):
    """One key's rate limit."""

    async def take(self) -> float:
        """Take a token: 0.0 if there was one, else the seconds until there will be (none taken).
        StateUnavailable when the limit's store cannot be reached."""
        ...


class RateLimits(Protocol):
    """Where the buckets live."""

    def bucket(self, name: str, rate: float, burst: int) -> Bucket:
        """The bucket of the key called `name` (key names are unique in the config)."""
        ...


class TokenBucket:
    """`rate` tokens a second up to `burst`, in this process; each call takes one."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._updated = time.monotonic()

    def take_now(self) -> float:
        """`take`, synchronously (nothing here waits)."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
        self._updated = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self.rate

    async def take(self) -> float:
        return self.take_now()


class LocalLimits:
    """Buckets in this process: what one gateway on one machine needs, with no other service."""

    def bucket(self, name: str, rate: float, burst: int) -> Bucket:
        return TokenBucket(rate, burst)
