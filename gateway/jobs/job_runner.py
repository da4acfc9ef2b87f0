"""The workers that run jobs, in the gateway: claim, call through the core, settle.

What another attempt may fix is retried: an error result whose class is `retryable`
(`unavailable`, `overloaded`, `rate_limited`: no pod could take the call, or it was cut
off) waits `backoff * 2**(attempt - 1)` seconds (at most `backoff_max`) and is queued again;
after `max_attempts` the job is `dead` (the dead-letter list). What another attempt would
only repeat is final: the function raised, bad arguments, a timeout, a limit of its runtime
end the job `failed` at once, its result kept. A gateway killed mid-job leaves it `running`
under a lease; once the lease lapses the job is queued again when its function is idempotent
(so it runs at least once), and otherwise ends `failed`, `outcome_unknown` (job.OUTCOME_UNKNOWN):
it may have had its effect, which only its caller can check. A drain that cuts off a job's
call ends a job that is not idempotent the same way.

The round trips to the store are batched, so that a store a millisecond away still runs
thousands of short jobs a second: one claim at a time takes as many due jobs as there are free
workers (`claim_many`), and the settles of jobs that end while another settle is on its way go
together in the next (`settle_many`). A claimed job holds its lease, renewed, from its claim;
jobs claimed as the gateway stops are given back to the queue at once (`release`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid

from toolmesh.config.jobs_config import JobsConfig
from toolmesh.errors import InternalError, StateUnavailable, Unavailable
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest
from toolmesh.gateway.core.result_json import result_json
from toolmesh.gateway.core.surfaces import Surface
from toolmesh.gateway.jobs.batcher import Batcher
from toolmesh.gateway.jobs.callbacks import CallbackSender
from toolmesh.gateway.jobs.job import OUTCOME_UNKNOWN, CallbackState, Job, JobStatus
from toolmesh.gateway.jobs.job_store import JobStore
from toolmesh.runtimes.functions.asking import ANSWERS_KEY
from toolmesh.runtimes.functions.results import ErrorInfo, Result

log = logging.getLogger("toolmesh.jobs")

#: Seconds an idle worker waits before looking for due jobs (retries, another gateway's).
POLL = 0.5
#: Seconds a stop waits for a claim on its way to end (and give back what it took).
CLAIM_END = 2.0
#: Jobs settled in one round trip at most.
SETTLE_BATCH = 64
#: Callbacks being delivered at once.
CALLBACK_BATCH = 16


def backoff(base: float, ceiling: float, attempt: int) -> float:
    """Seconds to wait after failed attempt number `attempt` (from 1)."""
    return float(min(ceiling, base * 2.0 ** (attempt - 1)))


class JobRunner:
    def __init__(self, mesh: Mesh, store: JobStore, config: JobsConfig, sender: CallbackSender) -> None:
        self.mesh = mesh
        self.store = store
        self.config = config
        self.sender = sender
        #: This gateway's name on the leases it holds.
        self.worker = uuid.uuid4().hex
        #: Set by `wake` (a job was queued) and when a worker becomes free: the claimer looks.
        self._wakeup = asyncio.Event()
        #: Settles made while one is on its way go together in the next.
        self._settles: Batcher[tuple[Job, float], bool] = Batcher(
            lambda settles: store.settle_many(settles, self.worker), SETTLE_BATCH
        )
        self._callbacks_due = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Task[None]] = set()
        #: The ids of the jobs this gateway runs now: only their leases are renewed, so a job
        #: whose worker lost track of it (a failed write) lapses and runs again.
        self._held: set[str] = set()
        #: The calls of the jobs this gateway runs now, by job id, so a cancel can stop one.
        self._calls: dict[str, asyncio.Task[Result]] = {}
        #: Callbacks being delivered (an unfinished one is delivered again after a restart).
        self._sending: set[asyncio.Task[None]] = set()
        self._stopping = False
        #: Attempts of the jobs of a trigger whose `[[triggers]]` entry sets `max_attempts`, by
        #: trigger name (the triggers fill it in); other jobs get `[jobs] max_attempts`.
        self.trigger_attempts: dict[str, int] = {}
        #: The functions this gateway serves: it claims only their jobs (another gateway of the
        #: project that serves the others runs those). Followed across reloads.
        self._served = mesh.catalog.names()
        self._unsubscribe = mesh.catalog.subscribe(self._catalog_changed)

    def _catalog_changed(self) -> None:
        self._served = self.mesh.catalog.names()
        self.wake()  # jobs of a function served from now on may be waiting

    def wake(self) -> None:
        """A job was queued: the claimer should look now rather than at its next poll."""
        self._wakeup.set()

    async def start(self) -> None:
        recovered = await self.store.recover(self.config.max_attempts)
        if recovered:
            log.info("queued again the jobs of a gateway that stopped", extra={"jobs": recovered})
        self._tasks = [
            asyncio.create_task(self._feed(), name="job-claims"),
            asyncio.create_task(self._deliver(), name="job-callbacks"),
            asyncio.create_task(self._maintain(), name="job-maintenance"),
        ]

    def abort(self, job_id: str) -> None:
        """Stop the call of a job that was just cancelled, if this gateway runs it."""
        call = self._calls.get(job_id)
        if call is not None:
            call.cancel()

    @property
    def stopping(self) -> bool:
        """No new job is taken: the gateway is stopping."""
        return self._stopping

    def stop_claiming(self) -> None:
        """Take no new jobs (the gateway is stopping); those running finish or are cut off."""
        self._stopping = True
        self._wakeup.set()

    async def stop(self, grace: float) -> None:
        """Stop: running jobs get `grace` seconds (the gateway's drain cuts their calls off,
        which queues them again), then everything is cancelled."""
        self.stop_claiming()
        self._unsubscribe()
        if self._tasks:
            # A claim on its way ends first, so that what it took is given back, not left leased.
            await asyncio.wait(self._tasks[:1], timeout=CLAIM_END)
        if self._busy:
            await asyncio.wait(set(self._busy), timeout=grace)
        for task in (*self._tasks, *self._sending):
            task.cancel()
        await asyncio.gather(*self._tasks, *self._sending, return_exceptions=True)

    # -- workers ------------------------------------------------------------------------------

    async def _feed(self) -> None:
        """Claim jobs for the free workers, one claim at a time, and start them. Idle, it looks
        again every POLL seconds (retries after their backoff, jobs queued by another gateway),
        or at once when woken (a submit, a trigger's message, a worker free again)."""
        while not self._stopping:
            room = self.config.workers - len(self._busy)
            self._wakeup.clear()  # a wake from now on is seen after this claim
            jobs = await self._claim(room) if room > 0 else []
            if self.stopping:  # it stopped during the claim
                await self._release(jobs)
                return
            for job in jobs:
                self._start(job)
            # Fewer than `room`: nothing more is due; as many: every worker is busy. Either way
            # the next claim waits for a wake (set meanwhile: at once), a free worker or the poll.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), POLL)

    def _start(self, job: Job) -> None:
        # Held (its lease renewed) from its claim; the task is not the claimer's, so that a
        # stop's cancel leaves it to settle, or to stay leased.
        self._held.add(job.id)
        task = asyncio.create_task(self._attempt(job))
        self._busy.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._busy.discard(task)
        self._wakeup.set()  # a worker is free

    async def _attempt(self, job: Job) -> None:
        try:
            await self._run(job)
        except Exception:
            log.exception("cannot settle a job; it runs again when its lease lapses", extra={"job": job.id})
        finally:
            self._held.discard(job.id)

    async def _claim(self, limit: int) -> list[Job]:
        try:
            return list(await self.store.claim_many(self.worker, self.config.lease, self._served, limit))
        except StateUnavailable:
            return []  # Redis is away: its outage is logged once, not at every poll
        except Exception:
            log.exception("cannot claim jobs")
            return []

    async def _release(self, jobs: list[Job]) -> None:
        """Give back jobs claimed as the gateway stopped: queued again now, not after the lease."""
        if not jobs:
            return
        try:
            await self.store.release(self.worker, [job.id for job in jobs])
        except Exception:
            log.exception("cannot give back claimed jobs; they run when their lease lapses")

    async def _run(self, job: Job) -> None:
        # The submit checked the key's scope and spent its rate; the attempt runs as a principal
        # allowed exactly this function, with no rate limit of its own.
        principal = Principal(job.owner, (job.function,))
        # Answers its caller gave to what the function asked (MCP tasks) replay with every attempt.
        metadata = {ANSWERS_KEY: job.answers.decode()} if job.answers else {}
        request = InvokeRequest(
            job.function, job.arguments, CallOptions(job.request_id or job.id, job.session_id, metadata)
        )
        call = asyncio.create_task(
            self.mesh.invoke(principal, request, Surface.BATCH, self.config.call_timeout)
        )
        self._calls[job.id] = call
        try:
            result = await call
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not call.cancelled() or (current is not None and current.cancelling()):
                raise  # the gateway is stopping
            log.info("job cancelled while it ran", extra={"job": job.id})
            return  # `abort`: the store already has it cancelled
        except Exception:
            # A bug, not the call's fault: counted as an attempt that another may get past.
            log.exception("job attempt failed unexpectedly", extra={"job": job.id})
            failure = ErrorInfo(InternalError.code, "internal error; see the gateway's log", retryable=True)
            result = Result.failure(failure)
        finally:
            self._calls.pop(job.id, None)
        job.result = result_json(result)
        run_after = 0.0
        error = result.error
        if error is None:
            job.status, job.error = JobStatus.SUCCEEDED, None
        else:
            job.error = {"code": error.code, "message": error.message}
            if not error.retryable:
                job.status = JobStatus.FAILED
            elif self._stopping and not job.idempotent and error.code == Unavailable.code:
                # Cut off by the drain, perhaps mid-run: another attempt could repeat its effect.
                # (`overloaded`, `rate_limited`: it never ran, so it is queued again.)
                job.status, job.error = JobStatus.FAILED, dict(OUTCOME_UNKNOWN)
            elif job.attempts >= self.trigger_attempts.get(job.trigger, self.config.max_attempts):
                job.status = JobStatus.DEAD
                job.error["message"] = f"{error.message} (after {job.attempts} attempts)"
            else:
                job.status = JobStatus.QUEUED
                run_after = time.time() + backoff(self.config.backoff, self.config.backoff_max, job.attempts)
        if job.status.finished and job.callback_url is not None:
            job.callback_state = CallbackState.PENDING
        if not await self._settles.submit((job, run_after)):
            # Or it was cancelled while another gateway ran it: then nothing runs again.
            log.warning("a job's lease lapsed while it ran; it runs again", extra={"job": job.id})
            return
        if job.trigger and job.status in (JobStatus.FAILED, JobStatus.DEAD):
            self.mesh.metrics.trigger_failed(job.trigger)
        log.info(
            "job %s",
            job.status.value,
            extra={"job": job.id, "function": job.function, "attempts": job.attempts},
        )
        if job.status.finished and job.callback_url is not None:
            self._callbacks_due.set()

    # -- callbacks ----------------------------------------------------------------------------

    async def _deliver(self) -> None:
        """Up to CALLBACK_BATCH deliveries in flight; each one that ends makes room for the next,
        so one slow receiver holds up no other."""
        sending = self._sending
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._callbacks_due.wait(), POLL)
            self._callbacks_due.clear()
            room = CALLBACK_BATCH - len(sending)
            if room <= 0:
                continue
            try:
                # Held past a whole POST, so no other worker on the same store sends it meanwhile.
                jobs = await self.store.take_callbacks(room, self.config.callback_timeout + 5)
            except StateUnavailable:
                continue
            except Exception:
                log.exception("cannot read the callbacks due")
                continue
            for job in jobs:
                task = asyncio.create_task(self._deliver_one(job))
                sending.add(task)
                task.add_done_callback(sending.discard)
                task.add_done_callback(lambda _: self._callbacks_due.set())

    async def _deliver_one(self, job: Job) -> None:
        try:
            await self._send_callback(job)
        except Exception:
            log.exception("cannot deliver a job's callback", extra={"job": job.id})

    async def _send_callback(self, job: Job) -> None:
        assert job.callback_url is not None
        body = json.dumps(job.document()).encode()
        # One key per outcome: the finish time (ms) tells a retried job's new outcome from its old.
        key = f"{job.id}.{round((job.finished or 0.0) * 1000)}"
        problem = await self.sender.send(job.callback_url, job.id, key, body)
        attempts = job.callback_attempts + 1
        if problem is None:
            await self.store.callback_done(job.id, CallbackState.DELIVERED, attempts, 0.0)
            return
        if attempts >= self.config.callback_attempts:
            log.warning(
                "gave up a job's callback", extra={"job": job.id, "attempts": attempts, "why": problem}
            )
            await self.store.callback_done(job.id, CallbackState.FAILED, attempts, 0.0)
            return
        due = time.time() + backoff(self.config.callback_backoff, self.config.backoff_max, attempts)
        log.info("job callback failed; retrying", extra={"job": job.id, "attempts": attempts, "why": problem})
        await self.store.callback_done(job.id, CallbackState.PENDING, attempts, due)

    # -- upkeep -------------------------------------------------------------------------------

    async def _maintain(self) -> None:
        """Renew this gateway's leases, queue again the jobs of gateways whose leases lapsed,
        purge finished jobs past their TTL."""
        every = self.config.lease / 3
        last_purge = 0.0
        while True:
            await asyncio.sleep(every)
            try:
                await self.store.renew(self.worker, sorted(self._held), self.config.lease)
                if await self.store.recover(self.config.max_attempts):
                    self.wake()
                now = time.time()
                if now - last_purge >= min(60.0, self.config.ttl / 4):
                    last_purge = now
                    await self.store.purge(now - self.config.ttl)
            except StateUnavailable:
                pass
            except Exception:
                log.exception("job upkeep failed")
