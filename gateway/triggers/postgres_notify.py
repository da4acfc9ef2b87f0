"""PostgreSQL LISTEN/NOTIFY: each NOTIFY on a trigger's `postgres_channel` is one call, one job.

PostgreSQL sends a NOTIFY to every session listening on its channel, so if each gateway
listened each would make a job. Instead one gateway listens at a time: the holder of the
trigger's lease in the ticks (Redis with `[state] url`, else the jobs' SQLite file), renewed
every RENEW seconds and given up when it cannot be renewed, on pause and at shutdown. A
gateway that stops listening does so before its lease can have passed to another
(`LEASE - MARGIN`), so two never listen at once.

The gap, inherent to NOTIFY (it is not kept: no one listening, no one told): a NOTIFY sent
while the lease changes hands (a leader that died: until its lease runs out, at most LEASE
seconds; one that stopped cleanly: the next renewal of another, at most RENEW) is lost. Use
Redis Streams or JetStream for messages that must not be lost.

The payload is the call: a JSON object of arguments (or, with `argument = NAME`, anything).
A payload that is not a call is a dead job naming why. A NOTIFY heard but not yet recorded
when recording fails (the job queue full) is kept and recorded at the next turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
import uuid
from typing import Any

import asyncpg

from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.triggers.trigger_service import TriggerMessage, TriggerService

log = logging.getLogger("toolmesh.triggers")

#: Seconds a lease lasts unless renewed, how often it is renewed, and how long before its end a
#: listener that could not renew it stops listening.
LEASE = 5.0
RENEW = 1.0
MARGIN = 1.5
#: Seconds to wait for PostgreSQL to answer a connection.
CONNECT_TIMEOUT = 5.0


def notify_message(payload: str, source: str) -> TriggerMessage:
    """A NOTIFY payload as a trigger message."""
    try:
        return TriggerMessage(json.loads(payload), source, raw=payload.encode())
    except (ValueError, RecursionError) as exc:
        return TriggerMessage(None, source, f"the NOTIFY payload is not JSON: {exc}", payload.encode())


class NotifyListener:
    """One trigger's LISTEN on this gateway while it holds the trigger's lease."""

    def __init__(self, service: TriggerService, trigger: TriggerConfig) -> None:
        assert trigger.postgres_channel is not None and trigger.postgres_url is not None
        self.service = service
        self.trigger = trigger
        self.channel = trigger.postgres_channel
        self.url = trigger.postgres_url
        self.holder = uuid.uuid4().hex
        self._conn: Any = None  # asyncpg.Connection while listening
        self._held_until = 0.0
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._recording: set[asyncio.Task[None]] = set()
        self._unrecorded: list[TriggerMessage] = []
        self._count = itertools.count(1)

    @property
    def listening(self) -> bool:
        return self._conn is not None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"trigger-{self.trigger.name}")

    async def stop(self) -> None:
        """Listen no more, record what was heard, and give the lease up for another gateway."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._unlisten()
        if self._recording:
            await asyncio.gather(*self._recording, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._retry_unrecorded()
        with contextlib.suppress(Exception):
            await self.service.ticks.release(self.trigger.name, self.holder)

    async def lag(self) -> tuple[int, float | None]:
        """NOTIFY keeps no backlog: what is heard and not yet recorded."""
        return len(self._recording) + len(self._unrecorded), None

    async def _run(self) -> None:
        while not self._stopping:
            try:
                await self._turn()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the ticks or PostgreSQL away
                log.warning(
                    "cannot listen for a trigger's NOTIFY",
                    extra={"trigger": self.trigger.name, "why": f"{type(exc).__name__}: {exc}"},
                )
            if self.listening and time.monotonic() > self._held_until - MARGIN:
                # The lease could not be renewed: another gateway may take it soon.
                await self._unlisten()
            await asyncio.sleep(RENEW)

    async def _turn(self) -> None:
        name = self.trigger.name
        if await self.service.paused(name):
            if self.listening:
                await self._unlisten()
                await self.service.ticks.release(name, self.holder)
            return
        asked = time.monotonic()
        if await self.service.ticks.lease(name, self.holder, LEASE):
            self._held_until = asked + LEASE
            if self._conn is not None and self._conn.is_closed():
                self._conn = None
            if self._conn is None:
                await self._listen()
        elif self.listening:
            await self._unlisten()
        await self._retry_unrecorded()

    async def _listen(self) -> None:
        conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT)
        try:
            await conn.add_listener(self.channel, self._heard)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        log.info("listening for a trigger's NOTIFY", extra={"trigger": self.trigger.name})

    async def _unlisten(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=CONNECT_TIMEOUT)

    def _heard(self, _conn: object, pid: int, _channel: str, payload: str) -> None:
        if self._conn is None:
            return  # heard after this gateway gave the lease up: the next holder's
        source = f"notify:{pid}:{next(self._count)}"
        task = asyncio.get_running_loop().create_task(self._record(notify_message(payload, source)))
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)

    async def _record(self, message: TriggerMessage) -> None:
        try:
            await self.service.fire(self.trigger, message)
        except Exception as exc:  # the job queue full, the store away: kept for the next turn
            self._unrecorded.append(message)
            log.warning(
                "cannot record a trigger's NOTIFY yet", extra={"trigger": self.trigger.name, "why": str(exc)}
            )

    async def _retry_unrecorded(self) -> None:
        while self._unrecorded:
            await self.service.fire(self.trigger, self._unrecorded[0])
            self._unrecorded.pop(0)
