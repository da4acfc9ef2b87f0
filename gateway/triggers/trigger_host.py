"""`TriggerHost`: a gateway's triggers from start-up to shutdown: the core, its ticks (in Redis
with `[state] url`, else in the jobs' SQLite file) and the schedules' tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolmesh.config import ConfigError, settled_value
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.triggers.schedules import Scheduler
from toolmesh.gateway.triggers.ticks import SqliteTicks, TriggerTicks
from toolmesh.gateway.triggers.trigger_service import TriggerService
from toolmesh.jobs_config import TriggerConfig

if TYPE_CHECKING:
    from toolmesh.gateway.state.redis_client import RedisAccess
    from toolmesh.gateway.triggers.redis_streams import StreamReader


@dataclass
class TriggerHost:
    service: TriggerService
    scheduler: Scheduler
    readers: list[StreamReader] = field(default_factory=list)
    #: Each webhook trigger's signing secret, by trigger name.
    secrets: Mapping[str, bytes] = field(default_factory=dict, repr=False)

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
        service = TriggerService(jobs, triggers, ticks)
        readers = []
        for trigger in triggers:
            if trigger.redis_stream is not None:
                url = trigger.redis_url or state_url
                if url is None:
                    raise ConfigError(
                        f"triggers.{trigger.name}: redis_stream needs redis_url, or [state] url to share"
                    )
                from toolmesh.gateway.triggers.redis_streams import StreamReader

                readers.append(StreamReader(service, trigger, url, project))
        await service.start()
        scheduler = Scheduler(service)
        scheduler.start()
        for reader in readers:
            reader.start()
        return cls(service, scheduler, readers, secrets)

    async def stop(self) -> None:
        """Stop firing: schedules and stream reads end; an entry being recorded is acknowledged
        once its job is, or stays pending for another gateway."""
        await self.scheduler.stop()
        await asyncio.gather(*(reader.stop() for reader in self.readers))
        await self.service.stop()
