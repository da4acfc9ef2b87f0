"""`TriggerHost`: a gateway's triggers from start-up to shutdown: the core, its ticks (in Redis
with `[state] url`, else in the jobs' SQLite file) and the schedules' tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolmesh.config import settled_value
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.triggers.schedules import Scheduler
from toolmesh.gateway.triggers.ticks import SqliteTicks, TriggerTicks
from toolmesh.gateway.triggers.trigger_service import TriggerService
from toolmesh.jobs_config import TriggerConfig

if TYPE_CHECKING:
    from toolmesh.gateway.state.redis_client import RedisAccess


@dataclass
class TriggerHost:
    service: TriggerService
    scheduler: Scheduler
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
    ) -> TriggerHost:
        ticks: TriggerTicks
        if redis is not None:
            from toolmesh.gateway.triggers.redis_ticks import RedisTicks

            ticks = RedisTicks(redis.client, redis.prefix, redis.outage, project)
        else:
            ticks = SqliteTicks(settled_value(jobs.config.path, "[jobs] path"), project)
        service = TriggerService(jobs, triggers, ticks)
        await service.start()
        scheduler = Scheduler(service)
        scheduler.start()
        return cls(service, scheduler, secrets)

    async def stop(self) -> None:
        await self.scheduler.stop()
        await self.service.stop()
