"""The gateway's one Redis client, and the one place Redis' exceptions become toolmesh errors.

Failing closed: when Redis cannot be reached (refused, reset, past `[state] timeout`), what
needed it is refused with `StateUnavailable` (503, retryable) instead of letting calls through
unlimited. The gateway itself keeps serving what needs no shared state (listing, health) and
recovers by itself: every command tries a fresh connection from the pool. The outage is logged
once when it starts and once when it ends, not once per request.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from toolmesh.errors import StateUnavailable

log = logging.getLogger("toolmesh.gateway")

#: What Retry-After says while Redis is away.
STATE_RETRY_AFTER = 1.0
#: Connections the gateway may hold to Redis (one per command in flight; pub/sub takes one).
MAX_CONNECTIONS = 64


def redact(url: str) -> str:
    """`url` without its password, for logs."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}" if ":" in credentials else f"{scheme}{sep}***@{host}"


def connect(url: str, timeout: float) -> redis.Redis:
    """A client with one connection pool for `url`. No retries inside redis-py: a request
    waits at most `timeout` for Redis, then hears StateUnavailable; the next one tries again."""
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        max_connections=MAX_CONNECTIONS,
        health_check_interval=30,
    )


class Outage:
    """Whether Redis is away, so that the log says when an outage starts and ends, once each."""

    def __init__(self, url: str) -> None:
        self.url = redact(url)
        self._down = False
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> StateUnavailable:
        with self._lock:
            starting, self._down = not self._down, True
        if starting:
            log.error(f"shared state unreachable at {self.url}: {exc}; refusing what needs it (503)")
        # What went wrong (and where Redis is) goes to the log, not to callers.
        return StateUnavailable(
            "the gateway's shared state (Redis) cannot be reached; try again shortly",
            retry_after=STATE_RETRY_AFTER,
        )

    def succeeded(self) -> None:
        if self._down:
            with self._lock:
                ending, self._down = self._down, False
            if ending:
                log.warning(f"shared state reachable again at {self.url}")

    @contextlib.contextmanager
    def translated(self) -> Iterator[None]:
        """Run Redis commands; their failures leave as StateUnavailable."""
        try:
            yield
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise self.failed(exc) from None
        except RedisError as exc:  # e.g. a read-only replica, OOM: Redis answered, but no
            raise self.failed(exc) from None
        self.succeeded()


@dataclass(frozen=True)
class RedisAccess:
    """The shared client, its key prefix and outage, for what keeps state of its own in Redis."""

    client: redis.Redis
    prefix: str
    outage: Outage
