"""What the gateway shares with its other replicas, built from `[state]` once at start-up.

    no url            LocalLimits, LocalFeed, the router's SQLite sessions    (one gateway)
                      and learned examples, routings and pending free-text
                      confirmations in memory, SQLite jobs and function state
    url = redis://..  RedisLimits, RedisFeed, RedisSessions, RedisExamples,  (any number)
                      RedisRoutings, RedisConfirmations, RedisJobStore,
                      RedisFunctionStore, RedisOutcomes, on one client

Keyed calls' outcomes (`Idempotency-Key`) without a URL are in a SQLite file of the project's
data directory, so gateways sharing the directory on one machine share them too.

Redis is imported only when a URL is given, so a gateway without `[state]` never loads it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from toolmesh.config import ConfigError, FunctionStateConfig, RouterConfig, StateConfig
from toolmesh.config.config_defaults import IDEMPOTENCY_FILE
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.errors import StateUnavailable
from toolmesh.gateway.idempotency.outcome_store import OutcomeStore
from toolmesh.gateway.jobs.job_store import JobStore
from toolmesh.gateway.state.confirmations import Confirmations, LocalConfirmations
from toolmesh.gateway.state.feed import ChangeFeed, LocalFeed
from toolmesh.gateway.state.function_state import FunctionStateService, FunctionStore
from toolmesh.gateway.state.limits import LocalLimits, RateLimits
from toolmesh.router.learning import ExampleStore, Routings
from toolmesh.router.sessions import Sessions

if TYPE_CHECKING:
    from toolmesh.gateway.state.redis_client import RedisAccess

log = logging.getLogger("toolmesh.gateway")

#: Builds the router's session store from its config (None: the router's own, SQLite).
SessionsFactory = Callable[[RouterConfig], Sessions]
#: Builds the job store of a project (its id) from `[jobs]` (None: the SQLite file of `[jobs] path`).
JobsFactory = Callable[[JobsConfig, str], JobStore]
#: Build the router's learned examples and its routings' memory (None: SQLite, this process).
ExamplesFactory = Callable[[], ExampleStore]
RoutingsFactory = Callable[[], Routings]
#: Builds the store of functions' durable state (None: the SQLite file of `[function_state] path`).
FunctionStoreFactory = Callable[[], FunctionStore]


@dataclass
class SharedState:
    limits: RateLimits = field(default_factory=LocalLimits)
    feed: ChangeFeed = field(default_factory=LocalFeed)
    sessions: SessionsFactory | None = None
    #: Where it lives, for logs ("local", or the Redis URL without its password).
    where: str = "local"
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list, repr=False)
    _check: Callable[[], Awaitable[None]] | None = field(default=None, repr=False)
    jobs: JobsFactory | None = None
    examples: ExamplesFactory | None = None
    routings: RoutingsFactory | None = None
    #: Free-text calls waiting for their confirmation.
    confirmations: Confirmations = field(default_factory=LocalConfirmations)
    function_store: FunctionStoreFactory | None = None
    #: The Redis behind it all, for triggers' ticks and streams (None: no `[state] url`).
    redis: RedisAccess | None = None
    #: Keyed calls' outcomes in Redis (None: `keyed_outcomes` opens the SQLite file).
    outcomes: OutcomeStore | None = None

    async def keyed_outcomes(self, data_dir: Path) -> OutcomeStore:
        """Where keyed calls' outcomes live: in Redis with the rest, else in their SQLite file in
        the project's `data_dir` (opened here, closed with the rest); ConfigError when it cannot be."""
        if self.outcomes is not None:
            return self.outcomes
        path = data_dir / IDEMPOTENCY_FILE
        from toolmesh.gateway.idempotency.sqlite_outcomes import SqliteOutcomes

        store = SqliteOutcomes(path)
        try:
            await store.open()
        except (OSError, sqlite3.Error) as exc:
            await store.aclose()
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(
                f"gateway: cannot write the Idempotency-Key file {path}: {reason}; give the project"
                " another data directory with `toolmesh up --data-dir DIR` or [project] data_dir"
            ) from None
        self._closers.append(store.aclose)
        return store

    async def function_state(self, config: FunctionStateConfig) -> FunctionStateService:
        """Functions' durable state (`ctx.state`): in Redis with the rest, else in its SQLite file
        (opened here, closed with the rest); ConfigError when the file cannot be opened."""
        if self.function_store is not None:
            return FunctionStateService(self.function_store(), config)
        from toolmesh.gateway.state.sqlite_function_state import SqliteFunctionStore

        store = SqliteFunctionStore(config.file())
        try:
            await store.open()
        except (OSError, sqlite3.Error) as exc:
            await store.close()
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(
                f"function_state: cannot write the state file {config.file()}: {reason};"
                " give the project another data directory with `toolmesh up --data-dir DIR` or"
                " [project] data_dir, or set [function_state] path to a writable file"
            ) from None
        self._closers.append(store.close)
        return FunctionStateService(store, config)

    async def check(self) -> None:
        """Try the shared state once, so that a Redis that is down (or a wrong URL) is in the
        log at start-up rather than at the first request; never raises."""
        if self._check is not None:
            await self._check()

    async def aclose(self) -> None:
        for close in reversed(self._closers):
            await close()


async def open_state(config: StateConfig, url: str | None) -> SharedState:
    """The shared state at `url` (`[state] url` or TOOLMESH_STATE_URL), or the local one.

    Nothing connects yet (so a start-up that fails later leaves nothing open), and start-up does
    not wait for Redis: a gateway whose Redis is down starts, answers what needs no state, and
    refuses the rest with 503 until Redis is back (see redis_client.py)."""
    if url is None:
        return SharedState()
    from toolmesh.gateway.idempotency.redis_outcomes import RedisOutcomes
    from toolmesh.gateway.jobs.redis_jobs import RedisJobStore
    from toolmesh.gateway.state.loop_calls import LoopCalls
    from toolmesh.gateway.state.redis_client import Outage, RedisAccess, connect, redact
    from toolmesh.gateway.state.redis_confirmations import RedisConfirmations
    from toolmesh.gateway.state.redis_feed import RedisFeed
    from toolmesh.gateway.state.redis_function_state import RedisFunctionStore
    from toolmesh.gateway.state.redis_learning import RedisExamples, RedisRoutings
    from toolmesh.gateway.state.redis_limits import RedisLimits
    from toolmesh.gateway.state.redis_sessions import RedisSessions

    client = connect(url, config.timeout)
    outage = Outage(url)
    prefix = config.key_prefix
    loop = asyncio.get_running_loop()
    feed = RedisFeed(client, prefix, outage)
    calls = LoopCalls(loop, outage, config.timeout)

    def sessions(router: RouterConfig) -> Sessions:
        return RedisSessions(
            client,
            loop,
            prefix,
            outage,
            ttl=router.session_ttl,
            max_turns=router.session_turns,
            timeout=config.timeout,
        )

    def jobs(config: JobsConfig, project: str) -> JobStore:
        return RedisJobStore(client, prefix, outage, config.ttl, config.max_attempts, project)

    async def check() -> None:
        try:
            with outage.translated():
                await client.ping()
        except StateUnavailable:
            return  # logged by the outage
        log.info("shared state in Redis", extra={"state": redact(url)})

    return SharedState(
        RedisLimits(client, prefix, outage),
        feed,
        sessions,
        redact(url),
        [client.aclose, feed.aclose],
        check,
        jobs,
        examples=lambda: RedisExamples(client, prefix, outage, calls),
        routings=lambda: RedisRoutings(client, prefix, calls),
        confirmations=RedisConfirmations(client, prefix, outage),
        function_store=lambda: RedisFunctionStore(client, prefix, outage),
        redis=RedisAccess(client, prefix, outage),
        outcomes=RedisOutcomes(client, prefix, outage),
    )
