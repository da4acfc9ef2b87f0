"""Jobs in Redis, for gateways on many machines: a stream of job ids and a consumer group.

    <p>jobs:queue          stream of {id}: jobs to run; group `workers`, one consumer per gateway
    <p>jobs:job:<id>       hash: the job's record (a finished one expires, see FINISHED_EXPIRY)
    <p>jobs:running        zset id -> lease deadline (renewed by its gateway)
    <p>jobs:delayed        zset id -> when a backed-off retry is due (then added to the stream)
    <p>jobs:callbacks      zset id -> when its callback is due
    <p>jobs:finished       zset id -> when it finished (purge)
    <p>jobs:active         counter of queued and running jobs: the `max_queued` bound
    <p>jobs:owner:<key>    zset id -> created: a key's jobs, for listing
    <p>jobs:dead:<key>     zset id -> created: a key's dead letters

A gateway claims with XREADGROUP (a new entry) or XAUTOCLAIM (an entry pending past the lease:
its gateway was killed), and each claim, settle, renew, cancel is one Lua script, so the hash,
the stream's pending list and the counter never disagree. An entry is acknowledged and deleted
when its attempt is settled. A lease is the job's own deadline (`lease_until`), so gateways
with different leases agree on when one lapsed; `recover` marks lapsed entries idle long
enough for any gateway's XAUTOCLAIM. The scripts build key names from the prefix, which a
single Redis (or a primary with replicas) allows, Redis Cluster does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from typing import Any, cast

import redis.asyncio as redis
from redis.exceptions import ResponseError

from toolmesh.errors import Overloaded, StateUnavailable
from toolmesh.gateway.jobs.job import CallbackState, Job, JobStatus
from toolmesh.gateway.state.redis_client import Outage

#: The consumer group every gateway reads the queue in.
GROUP = "workers"
#: A finished job's hash expires after this many TTLs: `purge` deletes it (and its index
#: entries) at one TTL; the expiry only cleans up when no gateway runs any more.
FINISHED_EXPIRY = 2
#: Jobs purged, or lapsed leases recovered, per script run (the next run does the rest).
BATCH = 500
#: Tries of a settle while Redis is unreachable (0.1 s, 0.2 s, ... apart).
SETTLE_TRIES = 4
LOST = json.dumps({"code": "unavailable", "message": "the gateway running it stopped"})

_COMMON = """
local P = ARGV[1]
local stream = P .. 'queue'
local GROUP = 'workers'
local function release(job, id)
  local entry = redis.call('HGET', job, 'entry')
  if entry then
    redis.call('XACK', stream, GROUP, entry)
    redis.call('XDEL', stream, entry)
  end
  redis.call('ZREM', P .. 'running', id)
  redis.call('HDEL', job, 'entry', 'worker', 'lease_until')
end
local function finish(job, id, now, ttl)
  redis.call('DECR', P .. 'active')
  redis.call('ZADD', P .. 'finished', now, id)
  redis.call('EXPIRE', job, ttl)
  local f = redis.call('HMGET', job, 'owner', 'status', 'callback_state', 'created')
  if f[2] == 'dead' then redis.call('ZADD', P .. 'dead:' .. f[1], f[4], id) end
  if f[3] == 'pending' then redis.call('ZADD', P .. 'callbacks', now, id) end
end
local function bury(job, id, now, ttl, lost)
  local cb = redis.call('HGET', job, 'callback_state')
  if cb ~= 'none' then cb = 'pending' end
  redis.call('HSET', job, 'status', 'dead', 'error', lost, 'finished', now, 'updated', now,
    'callback_state', cb)
  release(job, id)
  finish(job, id, now, ttl)
end
"""

#: ARGV prefix, id, max_queued, owner, created, then the hash's fields and values.
#: Returns -1 when queued, else the number of active jobs (the queue is full).
_ADD = """
local active = tonumber(redis.call('GET', P .. 'active') or '0')
if active >= tonumber(ARGV[3]) then return active end
redis.call('INCR', P .. 'active')
local job = P .. 'job:' .. ARGV[2]
redis.call('HSET', job, unpack(ARGV, 6))
redis.call('ZADD', P .. 'owner:' .. ARGV[4], ARGV[5], ARGV[2])
redis.call('XADD', stream, '*', 'id', ARGV[2])
return -1
"""

#: ARGV prefix, worker, now, lease_until, max_attempts, lost error, finished ttl, lease (ms).
_CLAIM = """
local worker, now, lease_until = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local max_attempts, lost, ttl = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local due = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', ARGV[3], 'LIMIT', 0, 100)
for _, id in ipairs(due) do
  redis.call('XADD', stream, '*', 'id', id)
  redis.call('ZREM', P .. 'delayed', id)
end
local function drop(entry)
  redis.call('XACK', stream, GROUP, entry)
  redis.call('XDEL', stream, entry)
end
local function take(entry, id, reclaimed)
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'status', 'worker', 'lease_until', 'attempts')
  local status = f[1]
  if not status or (status ~= 'queued' and status ~= 'running') then
    drop(entry)  -- purged, or cancelled while queued
    return nil
  end
  if reclaimed and status == 'running' and tonumber(f[3]) >= now then
    -- Idle past our lease but not past its holder's (a longer one): give it back.
    redis.call('XCLAIM', stream, GROUP, f[2], 0, entry, 'JUSTID')
    return nil
  end
  if reclaimed and tonumber(f[4]) >= max_attempts then
    redis.call('HSET', job, 'entry', entry)
    bury(job, id, ARGV[3], ttl, lost)
    return nil
  end
  redis.call('HSET', job, 'status', 'running', 'worker', worker, 'lease_until', lease_until,
    'updated', ARGV[3], 'entry', entry)
  redis.call('HINCRBY', job, 'attempts', 1)
  redis.call('ZADD', P .. 'running', lease_until, id)
  return redis.call('HGETALL', job)
end
local cursor = '0-0'
repeat
  local r = redis.call('XAUTOCLAIM', stream, GROUP, worker, ARGV[8], cursor, 'COUNT', 1)
  cursor = r[1]
  local e = r[2][1]
  if e then
    local got = take(e[1], e[2][2], true)
    if got then return got end
  end
until cursor == '0-0'
for _ = 1, 100 do
  local r = redis.call('XREADGROUP', 'GROUP', GROUP, worker, 'COUNT', 1, 'STREAMS', stream, '>')
  if not r or not r[1] then return nil end
  local e = r[1][2][1]
  local got = take(e[1], e[2][2], false)
  if got then return got end
end
return nil
"""

#: ARGV prefix, worker, lease_until, ids...
_RENEW = """
for i = 4, #ARGV do
  local job = P .. 'job:' .. ARGV[i]
  local f = redis.call('HMGET', job, 'status', 'worker', 'entry')
  if f[1] == 'running' and f[2] == ARGV[2] then
    redis.call('HSET', job, 'lease_until', ARGV[3])
    redis.call('ZADD', P .. 'running', ARGV[3], ARGV[i])
    redis.call('XCLAIM', stream, GROUP, ARGV[2], 0, f[3], 'JUSTID')  -- idle from now
  end
end
return 0
"""

#: ARGV prefix, id, worker, now, status, result, error ('' for none), run_after,
#: callback_state, finished ttl. Returns 1 if settled, 0 if the worker no longer held it.
_SETTLE = """
local id, now, status = ARGV[2], ARGV[4], ARGV[5]
local job = P .. 'job:' .. id
local f = redis.call('HMGET', job, 'status', 'worker')
if f[1] ~= 'running' or f[2] ~= ARGV[3] then return 0 end
redis.call('HSET', job, 'status', status, 'result', ARGV[6], 'updated', now, 'callback_state', ARGV[9])
if ARGV[7] == '' then redis.call('HDEL', job, 'error') else redis.call('HSET', job, 'error', ARGV[7]) end
release(job, id)
if status == 'queued' then
  redis.call('ZADD', P .. 'delayed', ARGV[8], id)
else
  redis.call('HSET', job, 'finished', now)
  finish(job, id, now, ARGV[10])
end
return 1
"""

#: ARGV prefix, now, max_attempts, lost error, finished ttl. Returns the lapsed jobs.
_RECOVER = f"""
local now, max_attempts = ARGV[2], tonumber(ARGV[3])
local lapsed = redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', '(' .. now, 'LIMIT', 0, {BATCH})
local n = 0
for _, id in ipairs(lapsed) do
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'status', 'attempts', 'entry', 'worker')
  if f[1] ~= 'running' then
    redis.call('ZREM', P .. 'running', id)
  else
    n = n + 1
    if tonumber(f[2]) >= max_attempts then
      bury(job, id, now, ARGV[5], ARGV[4])
    else
      redis.call('HSET', job, 'status', 'queued', 'updated', now)
      redis.call('HDEL', job, 'worker', 'lease_until')
      redis.call('ZREM', P .. 'running', id)
      -- Still pending, but idle far past any lease: the next XAUTOCLAIM anywhere takes it.
      redis.call('XCLAIM', stream, GROUP, f[4], 0, f[3], 'IDLE', 86400000000, 'JUSTID')
    end
  end
end
return n
"""

#: ARGV prefix, id, owner, now, statuses...
_REQUEUE = """
local id, owner, now = ARGV[2], ARGV[3], ARGV[4]
local job = P .. 'job:' .. id
local f = redis.call('HMGET', job, 'status', 'owner', 'callback_state')
if f[2] ~= owner then return nil end
local allowed = false
for i = 5, #ARGV do if ARGV[i] == f[1] then allowed = true end end
if not allowed then return nil end
local cb = 'pending'
if f[3] == 'none' then cb = 'none' end
redis.call('HSET', job, 'status', 'queued', 'attempts', 0, 'updated', now, 'callback_state', cb,
  'callback_attempts', 0)
redis.call('HDEL', job, 'result', 'error', 'finished')
redis.call('PERSIST', job)
redis.call('ZREM', P .. 'finished', id)
redis.call('ZREM', P .. 'dead:' .. owner, id)
redis.call('ZREM', P .. 'callbacks', id)
redis.call('INCR', P .. 'active')
redis.call('XADD', stream, '*', 'id', id)
return redis.call('HGETALL', job)
"""

#: ARGV prefix, id, owner, now, finished ttl.
_CANCEL = """
local id, now = ARGV[2], ARGV[4]
local job = P .. 'job:' .. id
local f = redis.call('HMGET', job, 'status', 'owner', 'callback_state')
if f[1] ~= 'queued' or f[2] ~= ARGV[3] then return nil end
local cb = 'failed'
if f[3] == 'none' then cb = 'none' end
redis.call('HSET', job, 'status', 'cancelled', 'finished', now, 'updated', now, 'callback_state', cb)
redis.call('ZREM', P .. 'delayed', id)
release(job, id)  -- a recovered job's entry is still pending; a fresh one is skipped at claim
finish(job, id, now, ARGV[5])
return redis.call('HGETALL', job)
"""

#: ARGV prefix, now, hold until, limit.
_TAKE_CALLBACKS = """
local ids = redis.call('ZRANGEBYSCORE', P .. 'callbacks', '-inf', ARGV[2], 'LIMIT', 0, ARGV[4])
local out = {}
for _, id in ipairs(ids) do
  local job = P .. 'job:' .. id
  if redis.call('HGET', job, 'callback_state') == 'pending' then
    redis.call('ZADD', P .. 'callbacks', ARGV[3], id)
    out[#out + 1] = redis.call('HGETALL', job)
  else
    redis.call('ZREM', P .. 'callbacks', id)
  end
end
return out
"""

#: ARGV prefix, id, state, attempts, due.
_CALLBACK_DONE = """
local job = P .. 'job:' .. ARGV[2]
if redis.call('EXISTS', job) == 0 then return 0 end
redis.call('HSET', job, 'callback_state', ARGV[3], 'callback_attempts', ARGV[4])
if ARGV[3] == 'pending' then
  redis.call('ZADD', P .. 'callbacks', ARGV[5], ARGV[2])
else
  redis.call('ZREM', P .. 'callbacks', ARGV[2])
end
return 1
"""

#: ARGV prefix, finished before.
_PURGE = f"""
local ids = redis.call('ZRANGEBYSCORE', P .. 'finished', '-inf', '(' .. ARGV[2], 'LIMIT', 0, {BATCH})
local n = 0
for _, id in ipairs(ids) do
  local job = P .. 'job:' .. id
  local f = redis.call('HMGET', job, 'owner', 'callback_state')
  if not f[1] then
    redis.call('ZREM', P .. 'finished', id)  -- expired already
  elseif f[2] ~= 'pending' then
    redis.call('DEL', job)
    redis.call('ZREM', P .. 'finished', id)
    redis.call('ZREM', P .. 'owner:' .. f[1], id)
    redis.call('ZREM', P .. 'dead:' .. f[1], id)
    redis.call('ZREM', P .. 'callbacks', id)
    n = n + 1
  end
end
return n
"""


def _float(value: bytes | None) -> float | None:
    return None if value is None else float(value)


def _job(flat: Sequence[bytes]) -> Job:
    """A job from its hash as scripts return it (HGETALL's flat list)."""
    return _from_hash(dict(zip(flat[::2], flat[1::2], strict=True)))


def _from_hash(h: dict[bytes, bytes]) -> Job:
    def text(name: bytes) -> str:
        return h.get(name, b"").decode()

    error = h.get(b"error")
    url = h.get(b"callback_url")
    return Job(
        id=text(b"id"),
        owner=text(b"owner"),
        function=text(b"function"),
        arguments=h[b"arguments"],
        request_id=text(b"request_id"),
        session_id=text(b"session_id"),
        status=JobStatus(text(b"status")),
        attempts=int(h.get(b"attempts", b"0")),
        result=h.get(b"result"),
        error=None if error is None else json.loads(error),
        callback_url=None if url is None else url.decode(),
        callback_state=CallbackState(text(b"callback_state")),
        callback_attempts=int(h.get(b"callback_attempts", b"0")),
        created=float(h[b"created"]),
        updated=float(h.get(b"updated", h[b"created"])),
        finished=_float(h.get(b"finished")),
    )


class RedisJobStore:
    """The `JobStore` of many gateways: keys under `<prefix>jobs:` on one Redis."""

    def __init__(
        self, client: redis.Redis, prefix: str, outage: Outage, ttl: float, max_attempts: int
    ) -> None:
        self.client = client
        self.outage = outage
        self.prefix = f"{prefix}jobs:"
        self._expiry = str(max(1, round(ttl * FINISHED_EXPIRY)))
        #: Lapsed jobs out of attempts are dead when a claim finds them, as `recover` does.
        self._max_attempts = max_attempts

        def script(body: str) -> Any:
            return client.register_script(_COMMON + body)

        self._add = script(_ADD)
        self._claim = script(_CLAIM)
        self._renew = script(_RENEW)
        self._settle = script(_SETTLE)
        self._recover = script(_RECOVER)
        self._requeue = script(_REQUEUE)
        self._cancel = script(_CANCEL)
        self._take_callbacks = script(_TAKE_CALLBACKS)
        self._callback_done = script(_CALLBACK_DONE)
        self._purge = script(_PURGE)

    async def _run(self, script: Any, *args: Any) -> Any:
        with self.outage.translated():
            try:
                return await script(args=[self.prefix, *args])
            except ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
            # Redis lost the group (restarted without its data): make it, then once more.
            await self._make_group()
            return await script(args=[self.prefix, *args])

    async def _make_group(self) -> None:
        try:
            await self.client.xgroup_create(self.prefix + "queue", GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def open(self) -> None:
        # A Redis that is down now is not fatal (see shared.py): the first claim makes the group.
        with contextlib.suppress(StateUnavailable), self.outage.translated():
            await self._make_group()  # logged by the outage if it fails

    async def close(self) -> None:
        """The client is the gateway's (shared.py closes it)."""

    async def add(self, job: Job, max_queued: int) -> None:
        fields: list[Any] = [
            "id", job.id, "owner", job.owner, "function", job.function, "arguments", job.arguments,
            "request_id", job.request_id, "session_id", job.session_id, "status", job.status.value,
            "attempts", 0, "callback_state", job.callback_state.value, "callback_attempts", 0,
            "created", repr(job.created), "updated", repr(job.created),
        ]  # fmt: skip
        if job.callback_url is not None:
            fields += ["callback_url", job.callback_url]
        active = int(await self._run(self._add, job.id, max_queued, job.owner, repr(job.created), *fields))
        if active >= 0:
            raise Overloaded(
                f"the job queue is full: {active} jobs are queued or running,"
                f" the limit ([jobs] max_queued) is {max_queued}; try again later",
                retry_after=1.0,
            )

    async def get(self, job_id: str) -> Job | None:
        with self.outage.translated():
            # The client decodes nothing (shared.py), so every reply is bytes.
            h = cast(dict[bytes, bytes], await self.client.hgetall(self.prefix + "job:" + job_id))
        return _from_hash(h) if h else None

    async def list(self, owner: str, status: JobStatus | None, limit: int) -> Sequence[Job]:
        index = self.prefix + ("dead:" if status is JobStatus.DEAD else "owner:") + owner
        found: list[Job] = []
        start = 0
        page = max(limit, 100)
        with self.outage.translated():
            while len(found) < limit:
                members = cast(list[bytes], await self.client.zrevrange(index, start, start + page - 1))
                ids = [member.decode() for member in members]
                if not ids:
                    break
                start += page
                async with self.client.pipeline(transaction=False) as pipe:
                    for job_id in ids:
                        pipe.hgetall(self.prefix + "job:" + job_id)
                    hashes = await pipe.execute()
                gone = [job_id for job_id, h in zip(ids, hashes, strict=True) if not h]
                if gone:  # expired: drop them from the index too
                    await self.client.zrem(index, *gone)
                    start -= len(gone)
                for h in hashes:
                    if h and (status is None or h[b"status"].decode() == status.value):
                        found.append(_from_hash(h))
        return found[:limit]

    async def claim(self, worker: str, lease: float) -> Job | None:
        now = time.time()
        flat = await self._run(
            self._claim,
            worker,
            repr(now),
            repr(now + lease),
            self._max_attempts,
            LOST,
            self._expiry,
            max(1, round(lease * 1000)),
        )
        return None if not flat else _job(flat)

    async def renew(self, worker: str, job_ids: Sequence[str], lease: float) -> None:
        if job_ids:
            await self._run(self._renew, worker, repr(time.time() + lease), *job_ids)

    async def settle(self, job: Job, worker: str, run_after: float = 0.0) -> bool:
        now = time.time()
        job.updated = now
        if job.status.finished:
            job.finished = now
        error = "" if job.error is None else json.dumps(job.error)
        args = (job.id, worker, repr(now), job.status.value, job.result or b"", error, repr(run_after))
        # A lost settle costs a whole run of the function (after the lease): worth a few tries
        # across a blip (a pooled connection to a Redis that restarted fails once).
        for attempt in range(SETTLE_TRIES):
            try:
                settled = await self._run(self._settle, *args, job.callback_state.value, self._expiry)
                break
            except StateUnavailable:
                if attempt == SETTLE_TRIES - 1:
                    raise
                await asyncio.sleep(0.1 * 2**attempt)
        return int(settled) == 1

    async def recover(self, max_attempts: int) -> int:
        self._max_attempts = max_attempts
        return int(await self._run(self._recover, repr(time.time()), max_attempts, LOST, self._expiry))

    async def requeue(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        statuses = [s.value for s in from_status]
        flat = await self._run(self._requeue, job_id, owner, repr(time.time()), *statuses)
        return None if not flat else _job(flat)

    async def cancel(self, job_id: str, owner: str) -> Job | None:
        flat = await self._run(self._cancel, job_id, owner, repr(time.time()), self._expiry)
        return None if not flat else _job(flat)

    async def take_callbacks(self, limit: int, hold: float) -> Sequence[Job]:
        now = time.time()
        jobs = await self._run(self._take_callbacks, repr(now), repr(now + hold), limit)
        return [_job(flat) for flat in jobs]

    async def callback_done(self, job_id: str, state: CallbackState, attempts: int, due: float) -> None:
        await self._run(self._callback_done, job_id, state.value, attempts, repr(due))

    async def purge(self, finished_before: float) -> int:
        return int(await self._run(self._purge, repr(finished_before)))

    async def count_active(self) -> int:
        with self.outage.translated():
            active = await self.client.get(self.prefix + "active")
        return int(active or 0)
