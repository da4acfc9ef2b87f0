"""`TriggerHost`: a gateway's triggers from start-up to shutdown: the core, its ticks (in Redis
with `[state] url`, else in the jobs' SQLite file) and the schedules' tasks."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from toolmesh.config import ConfigError, settled_value
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.errors import InvalidRequest
from toolmesh.gateway.jobs.job import Job
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.triggers.schedules import Scheduler, next_tick
from toolmesh.gateway.triggers.ticks import SqliteTicks, TriggerTicks
from toolmesh.gateway.triggers.trigger_service import (
    AT_ONCE_REDIS,
    AT_ONCE_SQLITE,
    TriggerMessage,
    TriggerService,
)

if TYPE_CHECKING:
    from toolmesh.gateway.state.redis_client import RedisAccess

log = logging.getLogger("toolmesh.triggers")


class Reader(Protocol):
    """A queue trigger's consumer on this gateway (Redis stream, JetStream, NOTIFY)."""

    trigger: TriggerConfig

    def start(self) -> None: ...

    async def stop(self) -> None:
        """Read no more; what was read is recorded and acknowledged (or left to be delivered again)."""
        ...

    async def lag(self) -> tuple[int, float | None]:
        """Messages waiting (not yet acknowledged) and the age in seconds of the oldest, if known."""
        ...


#: Seconds between looks at the queue triggers' lag (for the metrics).
LAG_EVERY = 5.0


@dataclass
class TriggerHost:
    service: TriggerService
    scheduler: Scheduler
    readers: list[Reader] = field(default_factory=list)
    #: Each webhook trigger's signing secret, by trigger name.
    secrets: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    lag_every: float = LAG_EVERY
    #: What a reloaded table's new queue triggers are started with.
    project: str = ""
    state_url: str | None = None
    _lag_task: asyncio.Task[None] | None = field(default=None, repr=False)

    @classmethod
    async def start(
        cls,
        jobs: JobService,
        triggers: Sequence[TriggerConfig],
        project: str,
        redis: RedisAccess | None,
        secrets: Mapping[str, bytes],
        state_url: str | None = None,
    ) -> TriggerHost:
        """Start `triggers`: their Redis streams on their `redis_url` or `state_url`."""
        ticks: TriggerTicks
        if redis is not None:
            from toolmesh.gateway.triggers.redis_ticks import RedisTicks

            ticks = RedisTicks(redis.client, redis.prefix, redis.outage, project)
        else:
            ticks = SqliteTicks(settled_value(jobs.config.path, "[jobs] path"), project)
        service = TriggerService(jobs, triggers, ticks, AT_ONCE_SQLITE if redis is None else AT_ONCE_REDIS)
        readers = [
            reader
            for trigger in triggers
            if (reader := _reader(service, trigger, project, state_url)) is not None
        ]
        await service.start()
        scheduler = Scheduler(service)
        scheduler.start()
        for reader in readers:
            reader.start()
        host = cls(service, scheduler, readers, secrets, project=project, state_url=state_url)
        if readers:
            host._lag_task = asyncio.create_task(host._watch_lag(), name="trigger-lag")
        return host

    async def stop(self) -> None:
        """Stop firing: schedules and stream reads end; an entry being recorded is acknowledged
        once its job is, or stays pending for another gateway."""
        if self._lag_task is not None:
            self._lag_task.cancel()
            await asyncio.gather(self._lag_task, return_exceptions=True)
        await self.scheduler.stop()
        await asyncio.gather(*(reader.stop() for reader in self.readers))
        await self.service.stop()

    async def reconfigure(self, triggers: Sequence[TriggerConfig], secrets: Mapping[str, bytes]) -> list[str]:
        """Follow a reloaded `[[triggers]]` table: a trigger added starts, one removed stops, one
        changed stops and starts again as it now is (its consumer acknowledges what it read
        first, as at shutdown); the others run on untouched. A table that cannot run (a function
        no runtime serves, a stream with no Redis) raises ConfigError and changes nothing.
        Returns the names of the triggers added, removed or changed."""
        before = dict(self.service.triggers)
        after = {t.name: t for t in triggers}
        changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        if not changed:
            self.secrets = secrets
            return []
        self.service.check(after.values())
        fresh = [
            reader
            for name in changed
            if name in after
            and (reader := _reader(self.service, after[name], self.project, self.state_url)) is not None
        ]
        await self.scheduler.stop(changed)
        gone = [reader for reader in self.readers if reader.trigger.name in changed]
        await asyncio.gather(*(reader.stop() for reader in gone))
        self.service.use(triggers)
        self.secrets = secrets
        self.readers = [reader for reader in self.readers if reader not in gone] + fresh
        for name in changed:
            if name in after:
                self.scheduler.start_one(after[name])
            else:
                self.service.mesh.metrics.trigger_removed(name)
        for reader in fresh:
            reader.start()
        if fresh and self._lag_task is None:
            self._lag_task = asyncio.create_task(self._watch_lag(), name="trigger-lag")
        log.info("triggers reloaded", extra={"changed": changed})
        return changed

    async def reload(
        self, file: str, environ: Mapping[str, str], after: Awaitable[object] | None = None
    ) -> list[str]:
        """Read `file` again and follow its `[[triggers]]` table (SIGHUP; once `after`, the
        runtimes' reload, is done, so a new trigger may call a new function). A file that does
        not parse, or a table that cannot run, is logged and leaves the triggers as they were."""
        from toolmesh.config import load_config

        if after is not None:
            with contextlib.suppress(Exception):
                await after
        try:
            config = load_config(file)
            return await self.reconfigure(config.triggers, trigger_secrets(config.triggers, environ))
        except ConfigError as exc:
            log.error(f"the triggers were not reloaded, they run as they were: {exc}")
            return []

    async def measure_lag(self) -> None:
        """Set each queue trigger's lag metrics (a source that cannot be asked keeps its last)."""
        metrics = self.service.mesh.metrics
        for reader in self.readers:
            try:
                waiting, oldest = await reader.lag()
            except Exception as exc:
                log.debug(
                    "cannot measure a trigger's lag", extra={"trigger": reader.trigger.name, "why": str(exc)}
                )
                continue
            metrics.trigger_lag(reader.trigger.name, waiting, oldest)

    async def _watch_lag(self) -> None:
        while True:
            await self.measure_lag()
            await asyncio.sleep(self.lag_every)

    async def describe(self, name: str) -> dict[str, Any]:
        """A trigger as `toolmesh triggers list` shows it: its source, whether it is paused and,
        for a schedule, when it fires next (Unix time)."""
        trigger = self.service.get(name)
        doc: dict[str, Any] = {"name": name, "function": trigger.function}
        if trigger.schedule is not None:
            doc["schedule"] = trigger.schedule + (f" ({trigger.timezone})" if trigger.timezone else "")
        elif trigger.every is not None:
            doc["every"] = trigger.every
        elif trigger.webhook is not None:
            doc["webhook"] = f"/v1/hooks/{trigger.webhook}"
        elif trigger.redis_stream is not None:
            doc["redis_stream"] = trigger.redis_stream
        elif trigger.nats_subject is not None:
            doc["nats_subject"] = trigger.nats_subject
        elif trigger.postgres_channel is not None:
            doc["postgres_channel"] = trigger.postgres_channel
        doc["paused"] = await self.service.paused(name)
        for reader in self.readers:
            if reader.trigger.name == name:
                # Messages not yet acknowledged, and the oldest one's age: a queue's backlog.
                with contextlib.suppress(Exception):
                    doc["waiting"], doc["oldest_waiting_seconds"] = await reader.lag()
        if trigger.scheduled:
            due = next_tick(trigger, time.time())
            doc["next_run"] = None if due is None else round(due, 3)
        return doc

    async def run(self, name: str) -> Job:
        """Fire a schedule now, outside its ticks (even a paused one: it was asked for)."""
        trigger = self.service.get(name)
        if not trigger.scheduled:
            raise InvalidRequest(
                f"trigger {name!r} runs on its messages; only a schedule (schedule or every) is run now",
                param="name",
            )
        stamp = round(time.time() * 1000)
        return await self.service.fire(trigger, TriggerMessage(dict(trigger.arguments), f"run:{stamp}"))


def _reader(
    service: TriggerService, trigger: TriggerConfig, project: str, state_url: str | None
) -> Reader | None:
    """The consumer of a queue trigger (None for a schedule or a webhook); each source's client
    library is imported only when a trigger uses it."""
    if trigger.redis_stream is not None:
        url = trigger.redis_url or state_url
        if url is None:
            raise ConfigError(
                f"triggers.{trigger.name}: redis_stream needs redis_url, or [state] url to share"
            )
        from toolmesh.gateway.triggers.redis_streams import StreamReader

        return StreamReader(service, trigger, url, project)
    if trigger.nats_subject is not None:
        _need("nats", "nats-py", trigger)
        from toolmesh.gateway.triggers.nats_jetstream import NatsReader

        return NatsReader(service, trigger, project)
    if trigger.postgres_channel is not None:
        _need("asyncpg", "asyncpg", trigger)
        from toolmesh.gateway.triggers.postgres_notify import NotifyListener

        return NotifyListener(service, trigger)
    return None


def _need(module: str, package: str, trigger: TriggerConfig) -> None:
    if importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"triggers.{trigger.name}: needs the {package} package: pip install 'toolmesh[triggers]'"
        )


def trigger_secrets(triggers: Sequence[TriggerConfig], env: Mapping[str, str]) -> dict[str, bytes]:
    """Each trigger's signing secret (`secret_env`) read from `env`, by trigger name."""
    found = {}
    for trigger in triggers:
        if trigger.secret_env is not None:
            value = env.get(trigger.secret_env)
            if not value:
                raise ConfigError(
                    f"triggers.{trigger.name}: environment variable {trigger.secret_env} is not set"
                )
            found[trigger.name] = value.encode()
    return found
