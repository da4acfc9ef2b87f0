"""Jobs in Redis, for gateways on many machines: a stream of job ids and a consumer group.

Every key is under `<p>jobs:<project>:` (`<p>` is `[state] key_prefix`), so gateways of two
projects on one Redis share nothing: neither claims, lists nor returns the other's jobs. Below,
<p> stands for the whole prefix.

    <p>jobs:queue          stream of {id}: jobs to run; group `workers`, one consumer per gateway
    <p>jobs:parked         set of functions with jobs no gateway that read them serves
    <p>jobs:parked:<fn>    list of ids of such jobs, taken by a gateway that serves <fn>
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
from collections.abc import Collection, Sequence
from typing import Any, cast

import redis.asyncio as redis
from redis.exceptions import ResponseError

from toolmesh.errors import Overloaded, StateUnavailable
from toolmesh.gateway.jobs.batcher import Batcher
from toolmesh.gateway.jobs.job import CallbackState, Job, JobStatus
from toolmesh.gateway.jobs.redis_job_scripts import (
    ADD,
    ANSWER,
    CALLBACK_DONE,
    CANCEL,
    CLAIM,
    COMMON,
    GROUP,
    PURGE,
    RECORD,
    RECOVER,
    RELEASE,
    RENEW,
    REQUEUE,
    SETTLE,
    TAKE_CALLBACKS,
)
from toolmesh.gateway.state.redis_client import Outage

#: A finished job's hash expires after this many TTLs: `purge` deletes it (and its index
#: entries) at one TTL; the expiry only cleans up when no gateway runs any more.
FINISHED_EXPIRY = 2
#: Adds sent in one pipeline at most.
ADD_BATCH = 128
#: Tries of a settle while Redis is unreachable (0.1 s, 0.2 s, ... apart).
SETTLE_TRIES = 4
LOST = json.dumps({"code": "unavailable", "message": "the gateway running it stopped"})


#: The hash field of each answer a job's caller gave (`answer:<ask key>`: the answer's JSON).
ANSWER_FIELD = b"answer:"


def _float(value: bytes | None) -> float | None:
    return None if value is None else float(value)


def _job(flat: Sequence[bytes]) -> Job:
    """A job from its hash as scripts return it (HGETALL's flat list)."""
    return _from_hash(dict(zip(flat[::2], flat[1::2], strict=True)))


def _unpack(data: bytes) -> dict[bytes, bytes]:
    """A hash the scripts' `packed` made: `<len(name)>:<len(value)>:<name><value>` per field."""
    h: dict[bytes, bytes] = {}
    at = 0
    while at < len(data):
        one = data.index(b":", at)
        two = data.index(b":", one + 1)
        name = two + 1
        value = name + int(data[at:one])
        at = value + int(data[one + 1 : two])
        h[data[name:value]] = data[value:at]
    return h


def _from_hash(h: dict[bytes, bytes]) -> Job:
    def text(name: bytes) -> str:
        return h.get(name, b"").decode()

    error = h.get(b"error")
    url = h.get(b"callback_url")
    # One field per answer, so answers sent at once are all kept (no read-modify-write).
    answers = {
        k[len(ANSWER_FIELD) :].decode(): json.loads(v) for k, v in h.items() if k.startswith(ANSWER_FIELD)
    }
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
        answers=json.dumps(answers).encode() if answers else None,
        trigger=text(b"trigger"),
        idempotent=h.get(b"idempotent") == b"1",
    )


class RedisJobStore:
    """The `JobStore` of many gateways: keys under `<prefix>jobs:<project>:` on one Redis."""

    def __init__(
        self, client: redis.Redis, prefix: str, outage: Outage, ttl: float, max_attempts: int, project: str
    ) -> None:
        if not project:
            raise ValueError("a job store needs a project id")
        self.client = client
        self.outage = outage
        self.project = project
        self.prefix = f"{prefix}jobs:{project}:"
        self._expiry = str(max(1, round(ttl * FINISHED_EXPIRY)))
        #: Lapsed jobs out of attempts are dead when a claim finds them, as `recover` does.
        self._max_attempts = max_attempts

        def script(body: str) -> Any:
            return client.register_script(COMMON + body)

        self._add = script(ADD)
        self._record = script(RECORD)
        self._claim = script(CLAIM)
        self._renew = script(RENEW)
        self._release = script(RELEASE)
        self._settle = script(SETTLE)
        self._recover = script(RECOVER)
        self._requeue = script(REQUEUE)
        self._cancel = script(CANCEL)
        self._answer = script(ANSWER)
        self._take_callbacks = script(TAKE_CALLBACKS)
        self._callback_done = script(CALLBACK_DONE)
        self._purge = script(PURGE)
        #: Adds made while one pipeline is on its way go together in the next.
        self._adds: Batcher[list[Any], Any] = Batcher(self._send_adds, ADD_BATCH)

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
        # A Redis that is down now is not fatal (see shared_state.py): the first claim makes the group.
        with contextlib.suppress(StateUnavailable), self.outage.translated():
            await self._make_group()  # logged by the outage if it fails

    async def close(self) -> None:
        """The client is the gateway's (shared_state.py closes it)."""

    async def add(self, job: Job, max_queued: int) -> None:
        fields: list[Any] = [
            "id", job.id, "owner", job.owner, "function", job.function, "arguments", job.arguments,
            "request_id", job.request_id, "session_id", job.session_id, "status", job.status.value,
            "attempts", 0, "callback_state", job.callback_state.value, "callback_attempts", 0,
            "created", repr(job.created), "updated", repr(job.created), "project", self.project,
            "trigger", job.trigger, "idempotent", int(job.idempotent),
        ]  # fmt: skip
        if job.callback_url is not None:
            fields += ["callback_url", job.callback_url]
        if job.status.finished:
            finished = job.finished or time.time()
            fields += [
                "error",
                json.dumps(job.error or {}),
                "finished",
                repr(finished),
                "updated",
                repr(finished),
            ]
            await self._run(
                self._record, job.id, repr(finished), job.owner, repr(job.created), self._expiry, *fields
            )
            return
        active = int(await self._adds.submit([job.id, max_queued, job.owner, repr(job.created), *fields]))
        if active >= 0:
            raise Overloaded(
                f"the job queue is full: {active} jobs are queued or running,"
                f" the limit ([jobs] max_queued) is {max_queued}; try again later",
                retry_after=1.0,
            )

    async def _send_adds(self, adds: list[list[Any]]) -> list[Any]:
        """ADD scripts in one pipeline: one write and one read for a trigger's batch of messages,
        each add its own reply (or error)."""
        with self.outage.translated():
            async with self.client.pipeline(transaction=False) as pipe:
                for args in adds:
                    await self._add(args=[self.prefix, *args], client=pipe)
                return await pipe.execute(raise_on_error=False)

    async def get(self, job_id: str) -> Job | None:
        with self.outage.translated():
            # The client decodes nothing (shared_state.py), so every reply is bytes.
            h = cast(dict[bytes, bytes], await self.client.hgetall(self.prefix + "job:" + job_id))
        return _from_hash(h) if h and h.get(b"project") == self.project.encode() else None

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

    async def claim(self, worker: str, lease: float, functions: Collection[str]) -> Job | None:
        jobs = await self.claim_many(worker, lease, functions, 1)
        return jobs[0] if jobs else None

    async def claim_many(
        self, worker: str, lease: float, functions: Collection[str], limit: int
    ) -> Sequence[Job]:
        if not functions or limit < 1:
            return []
        now = time.time()
        claimed = await self._run(
            self._claim,
            worker,
            repr(now),
            repr(now + lease),
            self._max_attempts,
            LOST,
            self._expiry,
            max(1, round(lease * 1000)),
            limit,
            *functions,
        )
        return [_from_hash(_unpack(packed)) for packed in claimed]

    async def release(self, worker: str, job_ids: Sequence[str]) -> None:
        if job_ids:
            await self._run(self._release, worker, *job_ids)

    async def renew(self, worker: str, job_ids: Sequence[str], lease: float) -> None:
        if job_ids:
            await self._run(self._renew, worker, repr(time.time() + lease), *job_ids)

    async def settle(self, job: Job, worker: str, run_after: float = 0.0) -> bool:
        return (await self.settle_many([(job, run_after)], worker))[0]

    async def settle_many(self, settles: Sequence[tuple[Job, float]], worker: str) -> Sequence[bool]:
        if not settles:
            return []
        now = time.time()
        args: list[Any] = [worker, repr(now), self._expiry]
        for job, run_after in settles:
            job.updated = now
            if job.status.finished:
                job.finished = now
            error = "" if job.error is None else json.dumps(job.error)
            args += [
                job.id, job.status.value, job.result or b"", error, repr(run_after), job.callback_state.value
            ]  # fmt: skip
        # A lost settle costs a whole run of the function (after the lease): worth a few tries
        # across a blip (a pooled connection to a Redis that restarted fails once). The script
        # settles nothing twice: a job already settled is no longer this worker's.
        for attempt in range(SETTLE_TRIES):
            try:
                settled = await self._run(self._settle, *args)
                break
            except StateUnavailable:
                if attempt == SETTLE_TRIES - 1:
                    raise
                await asyncio.sleep(0.1 * 2**attempt)
        return [int(flag) == 1 for flag in settled]

    async def recover(self, max_attempts: int) -> int:
        self._max_attempts = max_attempts
        return int(await self._run(self._recover, repr(time.time()), max_attempts, LOST, self._expiry))

    async def requeue(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        statuses = [s.value for s in from_status]
        flat = await self._run(self._requeue, job_id, owner, repr(time.time()), *statuses)
        return None if not flat else _job(flat)

    async def answer(self, job_id: str, owner: str, answers: bytes) -> Job | None:
        pairs: list[bytes] = []
        for key, value in json.loads(answers).items():
            pairs += [ANSWER_FIELD + key.encode(), json.dumps(value).encode()]
        flat = await self._run(self._answer, job_id, owner, repr(time.time()), *pairs)
        return None if not flat else _job(flat)

    async def cancel(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        statuses = [s.value for s in from_status]
        flat = await self._run(self._cancel, job_id, owner, repr(time.time()), self._expiry, *statuses)
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
