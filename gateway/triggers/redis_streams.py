"""Redis Streams: each entry of a trigger's `redis_stream` is one call, exactly one job.

Every gateway reads the stream in the trigger's consumer group (`toolmesh:<project>:<trigger>`,
made at the stream's end the first time, so what was added before the trigger existed is not
replayed), each as a consumer of its own. An entry is acknowledged (XACK) only once its job
is recorded, so a gateway that dies mid-entry leaves it pending; after `claim_after` seconds
idle another gateway claims it (XAUTOCLAIM) and records it: its job id is made from the
entry's id, so an entry recorded before the crash is not a second job. An entry that is not a
call (not JSON, wrong arguments) is a dead job and is acknowledged like any other: it never
blocks the stream.

An entry is `{field: value, ...}` (the arguments, strings read as the function's types) or
one field `json` holding the arguments object.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

import redis.asyncio as redis
from redis.exceptions import ResponseError

from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.state.redis_client import connect
from toolmesh.gateway.triggers.trigger_service import TriggerMessage, TriggerService

log = logging.getLogger("toolmesh.triggers")

#: Entries read at once, and how long one read waits for new ones (ms).
BATCH = 256
BLOCK_MS = 1000
#: Seconds the read connection waits past the block before it gives up on Redis.
SOCKET_MARGIN = 5.0
#: Seconds between looks for a dead consumer's entries, and between tries while Redis is away.
CLAIM_EVERY = 5.0
RETRY = 1.0


def entry_message(entry_id: str, fields: dict[bytes, bytes]) -> TriggerMessage:
    """An entry as a trigger message (its job's id made from `entry_id`)."""
    source = f"stream:{entry_id}"
    try:
        decoded = {k.decode(): v.decode() for k, v in fields.items()}
    except UnicodeDecodeError:
        return TriggerMessage(None, source, "the entry is not UTF-8 text", key=entry_id)
    if set(decoded) == {"json"}:
        raw = fields[b"json"]
        try:
            return TriggerMessage(json.loads(raw), source, raw=raw, key=entry_id)
        except (ValueError, RecursionError) as exc:
            return TriggerMessage(None, source, f"the entry's json field is not JSON: {exc}", raw, entry_id)
    return TriggerMessage(decoded, source, key=entry_id, fields=True)


class StreamReader:
    """One trigger's consumer on this gateway, from `start` to `stop`."""

    def __init__(self, service: TriggerService, trigger: TriggerConfig, url: str, project: str) -> None:
        assert trigger.redis_stream is not None
        self.service = service
        self.trigger = trigger
        self.stream = trigger.redis_stream
        self.group = trigger.redis_group(project)
        self.consumer = uuid.uuid4().hex
        # Its own connections: a blocking read holds one for BLOCK_MS, past `[state] timeout`.
        self.client: redis.Redis = connect(url, BLOCK_MS / 1000 + SOCKET_MARGIN)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        #: Entries read but not yet recorded when recording failed (the job queue full, Redis
        #: away): recorded first at the next turn, not left for a claim `claim_after` later.
        self._unrecorded: list[tuple[bytes, dict[bytes, bytes] | None]] = []

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"trigger-{self.trigger.name}")

    async def stop(self) -> None:
        """Read no more; what was read is recorded and acknowledged first (the read under way ends
        within BLOCK_MS), so a clean shutdown leaves no entry read but unacknowledged."""
        self._stopping = True
        if self._task is not None:
            done, _ = await asyncio.wait({self._task}, timeout=BLOCK_MS / 1000 + SOCKET_MARGIN)
            if not done:
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        # Its pending entries (none, unless a write failed) stay for another consumer to claim.
        await self.client.aclose()

    async def lag(self) -> tuple[int, float | None]:
        """Entries not yet acknowledged in the group (unread and pending) and the age in seconds of
        the oldest of them, from its id's time (None when there are none)."""
        groups: Any = await self.client.xinfo_groups(self.stream)
        found = [g for g in groups if _text(g["name"]) == self.group]
        if not found:
            return 0, None
        unread, pending = int(found[0].get("lag") or 0), int(found[0]["pending"])
        oldest: str | None = None
        if pending:
            summary: Any = await self.client.xpending(self.stream, self.group)
            oldest = _text(summary["min"]) if summary.get("min") else None
        elif unread:
            after: Any = await self.client.xrange(
                self.stream, min="(" + _text(found[0]["last-delivered-id"]), count=1
            )
            oldest = _text(after[0][0]) if after else None
        if oldest is None:
            return unread + pending, None
        return unread + pending, max(0.0, time.time() - int(oldest.split("-")[0]) / 1000)

    def stopping(self) -> bool:
        return self._stopping

    async def _make_group(self) -> None:
        try:
            await self.client.xgroup_create(self.stream, self.group, id="$", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _run(self) -> None:
        ready, last_claim, last_look, paused = False, 0.0, 0.0, False
        while not self._stopping:
            try:
                if time.monotonic() - last_look >= RETRY:
                    last_look = time.monotonic()
                    paused = await self.service.paused(self.trigger.name)
                if paused:  # its entries wait in the stream
                    await asyncio.sleep(RETRY)
                    continue
                if not ready:
                    await self._make_group()
                    ready = True
                if self._unrecorded:
                    entries, self._unrecorded = self._unrecorded, []
                    await self._record(entries)
                    continue
                if time.monotonic() - last_claim >= CLAIM_EVERY:
                    last_claim = time.monotonic()
                    await self._claim_orphans()
                await self._read()
            except asyncio.CancelledError:
                raise
            except ResponseError as exc:
                if "NOGROUP" in str(exc):
                    ready = False  # Redis lost the group (restarted empty): make it again
                else:
                    log.warning(
                        "cannot read a trigger's stream",
                        extra={"trigger": self.trigger.name, "why": str(exc)},
                    )
                await asyncio.sleep(RETRY)
            except Exception as exc:  # Redis away, the job queue full: the entries wait in the stream
                if self.stopping():
                    return  # they stay pending, for another gateway to claim
                log.warning(
                    "cannot read a trigger's stream", extra={"trigger": self.trigger.name, "why": str(exc)}
                )
                await asyncio.sleep(RETRY)

    async def _read(self) -> None:
        found: Any = await self.client.xreadgroup(
            self.group, self.consumer, {self.stream: ">"}, count=BATCH, block=BLOCK_MS
        )
        for _stream, entries in found or ():
            await self._record(entries)

    async def _claim_orphans(self) -> None:
        """Take the entries a consumer (a gateway that died) left pending past `claim_after`."""
        start = "0-0"
        while True:
            reply: Any = await self.client.xautoclaim(
                self.stream,
                self.group,
                self.consumer,
                min_idle_time=round(self.trigger.claim_after * 1000),
                start_id=start,
                count=BATCH,
            )
            start, entries = reply[0], reply[1]
            deleted = reply[2] if len(reply) > 2 else []
            if deleted:  # trimmed away before anyone recorded them: nothing left to run
                await self.client.xack(self.stream, self.group, *deleted)
            if entries:
                log.info(
                    "claimed a stopped gateway's stream entries",
                    extra={"trigger": self.trigger.name, "entries": len(entries)},
                )
                await self._record(entries)
            if start in (b"0-0", "0-0"):
                return

    async def _record(self, entries: list[tuple[bytes, dict[bytes, bytes] | None]]) -> None:
        """Record a batch of entries as jobs (at once: the store's writes overlap), then
        acknowledge those recorded; the others are kept to be recorded first at the next turn."""
        calls = [(entry_id, fields) for entry_id, fields in entries if fields is not None]
        outcomes: list[object] = []
        for first in range(0, len(calls), self.service.at_once):
            outcomes += await asyncio.gather(
                *(
                    self.service.fire(self.trigger, entry_message(entry_id.decode(), fields))
                    for entry_id, fields in calls[first : first + self.service.at_once]
                ),
                return_exceptions=True,
            )
        failed = iter(outcomes)
        done: list[bytes] = []
        problem: BaseException | None = None
        for entry in entries:
            outcome = None if entry[1] is None else next(failed)
            if isinstance(outcome, BaseException):
                self._unrecorded.append(entry)
                problem = problem or outcome
            else:
                done.append(entry[0])
        if done:
            await asyncio.shield(self.client.xack(self.stream, self.group, *done))
        if problem is not None:
            raise problem


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
