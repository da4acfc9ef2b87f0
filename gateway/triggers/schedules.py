"""Schedules: each `schedule` (cron) or `every` trigger fires one job per tick, on one replica.

Every replica computes the same ticks (a cron minute in the trigger's time zone, or a multiple
of the interval since the Unix epoch) and, at each, asks `TriggerTicks.claim` for it: only the
first to ask fires, so a tick fires once however many gateways run. A tick missed while no
gateway ran is not made up for. A paused trigger's ticks pass without firing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import time
from collections.abc import Collection
from zoneinfo import ZoneInfo

from toolmesh.config.jobs_config import CronSpec, TriggerConfig
from toolmesh.errors import ToolmeshError
from toolmesh.gateway.triggers.trigger_service import TriggerMessage, TriggerService

log = logging.getLogger("toolmesh.triggers")

#: Cron ticks are looked for this many days ahead ("0 0 30 2 *" never comes).
CRON_HORIZON_DAYS = 366 * 5


def _day_matches(spec: CronSpec, day: dt.date) -> bool:
    weekday = (day.weekday() + 1) % 7  # Python's Monday=0 -> cron's Sunday=0
    in_days, in_weekdays = day.day in spec.days, weekday in spec.weekdays
    if spec.any_day or spec.any_weekday:
        return in_days and in_weekdays
    return in_days or in_weekdays


def next_cron(spec: CronSpec, after: float, zone: dt.tzinfo | None) -> float | None:
    """The first minute strictly after `after` (Unix time) that `spec` names, in `zone` (None:
    local time), as Unix time; None if none comes within CRON_HORIZON_DAYS."""
    start = dt.datetime.fromtimestamp(after, zone).replace(second=0, microsecond=0, tzinfo=None)
    start += dt.timedelta(minutes=1)
    day = start.date()
    for _ in range(CRON_HORIZON_DAYS):
        if day.month in spec.months and _day_matches(spec, day):
            first = start.time() if day == start.date() else dt.time(0, 0)
            for hour in sorted(h for h in spec.hours if h >= first.hour):
                low = first.minute if hour == first.hour else 0
                minutes = [m for m in sorted(spec.minutes) if m >= low]
                if minutes:
                    wall = dt.datetime.combine(day, dt.time(hour, minutes[0]))
                    # A wall time skipped by a DST change fires at its moment an hour on.
                    return wall.replace(tzinfo=zone).timestamp() if zone else wall.timestamp()
        day += dt.timedelta(days=1)
    return None


def next_tick(trigger: TriggerConfig, after: float) -> float | None:
    interval = trigger.interval()
    if interval is not None:
        return (math.floor(after / interval) + 1) * interval
    spec = trigger.cron()
    assert spec is not None
    return next_cron(spec, after, ZoneInfo(trigger.timezone) if trigger.timezone else None)


class Scheduler:
    """One task per scheduled trigger, from `start` to `stop`."""

    def __init__(self, service: TriggerService) -> None:
        self.service = service
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self) -> None:
        for trigger in self.service.triggers.values():
            self.start_one(trigger)

    def start_one(self, trigger: TriggerConfig) -> None:
        if trigger.scheduled:
            self._tasks[trigger.name] = asyncio.create_task(
                self._run(trigger), name=f"trigger-{trigger.name}"
            )

    async def stop(self, names: Collection[str] | None = None) -> None:
        """Stop the schedules of `names` (default: all)."""
        stopping = [self._tasks.pop(n) for n in list(self._tasks) if names is None or n in names]
        for task in stopping:
            task.cancel()
        await asyncio.gather(*stopping, return_exceptions=True)

    async def _run(self, trigger: TriggerConfig) -> None:
        last = time.time()
        while True:
            due = next_tick(trigger, last)
            if due is None:
                log.warning("a schedule never comes again", extra={"trigger": trigger.name})
                return
            await asyncio.sleep(max(0.0, due - time.time()))
            last = due
            try:
                await self.tick(trigger, due)
            except ToolmeshError as exc:  # Redis away, the queue full: this tick is lost
                log.warning(
                    "a schedule's tick did not fire", extra={"trigger": trigger.name, "why": exc.message}
                )
            except Exception:
                log.exception("a schedule's tick failed", extra={"trigger": trigger.name})

    async def tick(self, trigger: TriggerConfig, due: float) -> bool:
        """Fire `trigger`'s tick due at `due` unless it is paused or another replica has."""
        if await self.service.paused(trigger.name):
            return False
        tick = round(due * 1000)
        if not await self.service.ticks.claim(trigger.name, tick):
            return False
        await self.service.fire(trigger, TriggerMessage(dict(trigger.arguments), f"tick:{tick}"))
        return True
