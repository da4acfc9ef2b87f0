"""The seam between jobs and where they are kept: `JobStore`.

The SQLite store (sqlite_jobs.py) keeps them in one file for the gateways of one machine; a
store on Redis Streams (consumer groups, claims of a dead replica's entries) can plug in
here for gateways on many. A running job is *claimed* by a worker with a lease it renews;
one whose lease lapses (its gateway was killed) is queued again when its function is
idempotent, so it runs at least once; another ends failed, `outcome_unknown` (it may have had
its effect, which is for its caller to check, never run twice behind its back).

A store belongs to one project (`[project] id`): every job it adds carries the id, and every
read, claim and change sees only that project's jobs, so gateways of two projects pointed at
the same file (or Redis) never run, list or return each other's. A gateway also claims only
jobs of functions it serves: another's stay queued for a gateway that serves them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from toolmesh.gateway.jobs.job import CallbackState, Job, JobStatus


class JobStore(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def add(self, job: Job, max_queued: int) -> None:
        """Queue `job`; raise `Overloaded` if `max_queued` jobs are already queued or running.
        A job already finished (a trigger's message that fits no function: dead at once, its
        error said) is recorded as it is, never queued, whatever the queue holds. A job whose id
        is already recorded is not added again (a trigger's message delivered twice: its job id
        is made from the message's)."""
        ...

    async def get(self, job_id: str) -> Job | None: ...

    async def list(self, owner: str, status: JobStatus | None, limit: int) -> Sequence[Job]:
        """`owner`'s jobs, newest first."""
        ...

    async def claim(self, worker: str, lease: float, functions: Collection[str]) -> Job | None:
        """Take the oldest queued job that is due and calls one of `functions` (those this
        gateway serves): it is running, one attempt more, held by `worker` for `lease` seconds."""
        ...

    async def claim_many(
        self, worker: str, lease: float, functions: Collection[str], limit: int
    ) -> Sequence[Job]:
        """Up to `limit` jobs as `claim` takes one, in one round trip to the store, oldest first.
        Each holds its lease from now, whether or not its worker has started it yet."""
        ...

    async def release(self, worker: str, job_ids: Sequence[str]) -> None:
        """Queue again, due now, jobs `worker` claimed but never started (it is stopping): the
        attempt their claim counted is given back."""
        ...

    async def renew(self, worker: str, job_ids: Sequence[str], lease: float) -> None:
        """Extend the lease of these jobs, if `worker` still holds them."""
        ...

    async def settle(self, job: Job, worker: str, run_after: float = 0.0) -> bool:
        """Write back a job `worker` ran: finished, or queued again to run after `run_after`
        (a Unix time). False if the worker no longer held it (its lease had lapsed)."""
        ...

    async def settle_many(self, settles: Sequence[tuple[Job, float]], worker: str) -> Sequence[bool]:
        """`settle` for each (job, run_after), in one round trip; a flag per job, in order."""
        ...

    async def recover(self, max_attempts: int) -> int:
        """Queue again the running jobs whose lease lapsed; those out of attempts are dead,
        those not idempotent failed with `OUTCOME_UNKNOWN`."""
        ...

    async def requeue(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        """Queue a job of `owner` in one of `from_status` again, attempts from zero."""
        ...

    async def answer(self, job_id: str, owner: str, answers: bytes) -> Job | None:
        """Merge `answers` (a JSON object) into those of a failed job of `owner` whose function
        asked its caller; None if it is not failed (or not found)."""
        ...

    async def cancel(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        """Cancel a job of `owner` in one of `from_status` (a running one's settle then fails,
        so its result is dropped); None if it is in another (or not found)."""
        ...

    async def take_callbacks(self, limit: int, hold: float) -> Sequence[Job]:
        """Finished jobs whose callback is due, each held `hold` seconds for its delivery."""
        ...

    async def callback_done(self, job_id: str, state: CallbackState, attempts: int, due: float) -> None:
        """Record a delivery: its state and attempts, and when to try again if still pending."""
        ...

    async def purge(self, finished_before: float) -> int:
        """Delete jobs finished before that Unix time (whose callbacks are not pending)."""
        ...

    async def count_active(self) -> int:
        """Jobs queued or running."""
        ...
