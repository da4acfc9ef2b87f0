"""`JobService`: what a front door asks of jobs, for a principal. Transport-free, like `Mesh`.

A job is a call: submitting one needs the key to be allowed the function and spends one unit
of its rate limit, exactly like a synchronous call; retrying a dead job spends another. A
caller sees only its own jobs (those its key, by name, submitted): another's job is
`job_not_found`, as one that never existed.

A submit may carry an `Idempotency-Key`: the job's id is then made from the project, the
caller and the key, so the store itself is the key's record (kept as long as the job, `[jobs]
ttl` after it finished) and a repeat — the caller retrying through another replica after the
first died — finds the job instead of making a second. The same key with another function or
other arguments is `IdempotencyMismatch` (422).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from toolmesh.config import ConfigError, settled_value
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.errors import IdempotencyMismatch, InvalidRequest, JobNotFound
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import InvokeRequest
from toolmesh.gateway.core.result_json import result_from_json
from toolmesh.gateway.jobs.argument_check import check_arguments
from toolmesh.gateway.jobs.callbacks import CallbackSender, check_callback_url
from toolmesh.gateway.jobs.destinations import Destinations
from toolmesh.gateway.jobs.job import CallbackState, Job, JobStatus, new_job_id
from toolmesh.gateway.jobs.job_runner import JobRunner
from toolmesh.gateway.jobs.job_store import JobStore
from toolmesh.gateway.jobs.sqlite_jobs import SqliteJobStore
from toolmesh.runtimes.functions.asking import pending_asks

#: Most jobs one listing answers.
MAX_LIST = 1000
#: The statuses a job may be cancelled from (and a failed one that waits for answers).
CANCELLABLE = (JobStatus.QUEUED, JobStatus.RUNNING)
#: The statuses a job may be retried from.
RETRYABLE = (JobStatus.DEAD, JobStatus.FAILED, JobStatus.CANCELLED)
#: The longest `Idempotency-Key` taken (a UUID is 36 characters).
MAX_KEY = 255


class JobService:
    """The jobs of one project (`project`, its id): a store of another project's, even the same
    file or Redis, is never read."""

    def __init__(
        self,
        mesh: Mesh,
        config: JobsConfig,
        callback_secret: str | None,
        project: str,
        store: JobStore | None = None,
    ) -> None:
        self.mesh = mesh
        self.config = config
        self.project = project
        self._secret = callback_secret
        self._destinations = Destinations(config.callback_hosts)
        self.store: JobStore = store or SqliteJobStore(settled_value(config.path, "[jobs] path"), project)
        self.runner = JobRunner(
            mesh,
            self.store,
            config,
            CallbackSender(callback_secret, config.callback_timeout, self._destinations),
        )

    async def start(self) -> None:
        try:
            await self.store.open()
        except (OSError, sqlite3.Error) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(
                f"jobs: cannot write the jobs file {self.config.path}: {reason};"
                " give the project another data directory with `toolmesh up --data-dir DIR` or"
                " [project] data_dir, set [jobs] path to a writable file, or [jobs] enabled = false"
            ) from None
        await self.runner.start()

    async def stop(self, grace: float) -> None:
        await self.runner.stop(grace)
        await self.runner.sender.close()
        await self.store.close()

    async def submit(
        self, principal: Principal, request: InvokeRequest, callback_url: str | None = None
    ) -> Job:
        """Queue a call and return its job at once; refused like a direct call would be
        (unknown function, bad arguments, rate limit), or `overloaded` when the queue is full."""
        job, _ = await self.submit_once(principal, request, callback_url, None)
        return job

    async def submit_once(
        self,
        principal: Principal,
        request: InvokeRequest,
        callback_url: str | None,
        idempotency_key: str | None,
    ) -> tuple[Job, bool]:
        """`submit`, once per `idempotency_key` (None: always): the job, and whether this call
        made it (False: a repeat, answered the job the key's first call made)."""
        job_id = new_job_id()
        if idempotency_key is not None:
            job_id = self._keyed_id(principal, idempotency_key)
        await principal.spend()
        spec = self.mesh.function(request.name, principal)
        check_arguments(spec.input_schema, request.arguments)
        if idempotency_key is not None:
            # Before the queue's bound: a repeat whose job exists is answered even when the
            # queue is full now.
            existing = await self.store.get(job_id)
            if existing is not None:
                return _same_call(existing, spec.qualified_name, request.arguments, idempotency_key), False
        if callback_url is not None:
            callback_url = check_callback_url(callback_url, self._secret, self._destinations)
        job = Job(
            id=job_id,
            owner=principal.name,
            function=spec.qualified_name,
            arguments=request.arguments,
            request_id=request.options.request_id,
            session_id=request.options.session_id,
            callback_url=callback_url,
            callback_state=CallbackState.NONE if callback_url is None else CallbackState.PENDING,
            idempotent=spec.annotations.idempotent or spec.annotations.read_only,
        )
        await self.store.add(job, self.config.max_queued)
        self.runner.wake()
        if idempotency_key is None:
            return job, True
        # Two repeats at once both add; the store keeps the first, which both answer.
        stored = await self.store.get(job_id)
        if stored is None:  # purged at once: only with a TTL shorter than this call
            return job, True
        made = stored.created == job.created and stored.arguments == job.arguments
        return _same_call(stored, spec.qualified_name, request.arguments, idempotency_key), made

    def _keyed_id(self, principal: Principal, key: str) -> str:
        if not key or len(key) > MAX_KEY or not (key.isascii() and key.isprintable()):
            raise InvalidRequest(
                f"Idempotency-Key must be 1 to {MAX_KEY} printable ASCII characters", param="Idempotency-Key"
            )
        # The project and the caller in it: another key's or project's same key is another job.
        digest = hashlib.sha256(f"{self.project}\0{principal.name}\0{key}".encode()).hexdigest()
        return "job_" + digest[:24]

    async def get(self, principal: Principal, job_id: str) -> Job:
        job = await self.store.get(job_id) if _plausible(job_id) else None
        if job is None or job.owner != principal.name:
            raise JobNotFound(f"no job {job_id!r}", param="id")
        return job

    async def list(self, principal: Principal, status: str | None = None, limit: int = 100) -> Sequence[Job]:
        """The caller's jobs, newest first; `status="dead"` is its dead-letter list."""
        wanted = None
        if status:
            try:
                wanted = JobStatus(status)
            except ValueError:
                names = ", ".join(s.value for s in JobStatus)
                raise InvalidRequest(
                    f"status must be one of {names}, got {status!r}", param="status"
                ) from None
        if not 1 <= limit <= MAX_LIST:
            raise InvalidRequest(f"limit must be from 1 to {MAX_LIST}, got {limit}", param="limit")
        return await self.store.list(principal.name, wanted, limit)

    async def retry(self, principal: Principal, job_id: str) -> Job:
        """Queue a dead, failed or cancelled job again, with all its attempts (one call's rate)."""
        job = await self.get(principal, job_id)
        await principal.spend()
        self.mesh.function(job.function, principal)  # still allowed (scopes and catalog change)
        again = await self.store.requeue(job.id, principal.name, RETRYABLE)
        if again is None:
            raise InvalidRequest(
                f"job {job_id!r} is {job.status.value}; only dead, failed or cancelled jobs are retried",
                param="id",
            )
        self.runner.wake()
        return again

    async def answer(
        self, principal: Principal, job_id: str, answers: Mapping[str, Any], *, resume: bool
    ) -> Job:
        """Record answers to what a job's function asked its caller (it failed `input_required`);
        with `resume`, queue it again to replay with every answer so far (one call's rate)."""
        job = await self.get(principal, job_id)
        answered = await self.store.answer(job.id, principal.name, json.dumps(answers).encode())
        if answered is None:
            raise InvalidRequest(f"job {job_id!r} is {job.status.value}; it waits for no answer", param="id")
        return await self.retry(principal, job_id) if resume else answered

    async def cancel(self, principal: Principal, job_id: str) -> Job:
        """Cancel a queued or running job, or one that waits for its caller's answers. A running
        call is stopped at once when this gateway runs it; on another gateway it runs to its end,
        and its result is dropped."""
        job = await self.get(principal, job_id)
        cancellable = CANCELLABLE + ((JobStatus.FAILED,) if waits_for_answers(job) else ())
        cancelled = await self.store.cancel(job.id, principal.name, cancellable)
        if cancelled is None:
            raise InvalidRequest(
                f"job {job_id!r} is {job.status.value}; only queued or running jobs can be cancelled",
                param="id",
            )
        self.runner.abort(job.id)
        return cancelled


def waits_for_answers(job: Job) -> bool:
    """Whether `job` failed because its function asked its caller something (answered with
    `answer`, from an MCP task)."""
    return (
        job.status is JobStatus.FAILED
        and job.result is not None
        and pending_asks(result_from_json(job.result)) is not None
    )


def _same_call(job: Job, function: str, arguments: bytes, key: str) -> Job:
    """`job`, the one made by the first call with `key`, if this call is that call again."""
    if job.function != function or json.loads(job.arguments) != json.loads(arguments):
        raise IdempotencyMismatch(
            f"Idempotency-Key {key!r} was used for another call (job {job.id}, function"
            f" {job.function}, other arguments); send a new call with a new key",
            param="Idempotency-Key",
        )
    return job


def _plausible(job_id: str) -> bool:
    return len(job_id) <= 64 and job_id.isascii() and job_id.isprintable()
