"""Jobs in one SQLite file: WAL, one connection on a thread of its own (never the event loop).

Every change is one short transaction, so gateways sharing the file (one machine) share one
queue safely: a claim is a single `UPDATE ... RETURNING` under SQLite's write lock. A running
job carries a lease (`lease_until`) its worker renews; when a gateway is killed its leases
lapse and `recover` queues those jobs again, here or in another gateway on the same file (or
fails those not idempotent: their outcome is unknown).
Every statement names the store's project (the `project` column), so gateways of another
project on the same file are strangers: neither side claims, lists or returns the other's jobs.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from toolmesh.errors import Overloaded
from toolmesh.gateway.jobs.batcher import Batcher
from toolmesh.gateway.jobs.job import OUTCOME_UNKNOWN, CallbackState, Job, JobStatus
from toolmesh.gateway.state.sqlite_thread import SqliteThread

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    function TEXT NOT NULL,
    arguments BLOB NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    result BLOB,
    error TEXT,
    callback_url TEXT,
    callback_state TEXT NOT NULL DEFAULT 'none',
    callback_attempts INTEGER NOT NULL DEFAULT 0,
    callback_due REAL NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    finished REAL,
    run_after REAL NOT NULL DEFAULT 0,
    worker TEXT,
    lease_until REAL NOT NULL DEFAULT 0,
    answers BLOB,
    project TEXT NOT NULL DEFAULT '',
    trigger TEXT NOT NULL DEFAULT '',
    idempotent INTEGER NOT NULL DEFAULT 0
);
"""
#: After the added columns (an older file gets `project` first). The indexes lead with the
#: project: every query names it.
_INDEXES = """
DROP INDEX IF EXISTS jobs_due;
DROP INDEX IF EXISTS jobs_owner;
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (project, status, run_after);
CREATE INDEX IF NOT EXISTS jobs_project_owner ON jobs (project, owner, status, created);
CREATE INDEX IF NOT EXISTS jobs_callbacks ON jobs (callback_state, callback_due);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished);
"""
_COLUMNS = (
    "id, owner, function, arguments, request_id, session_id, status, attempts, result, error,"
    " callback_url, callback_state, callback_attempts, created, updated, finished, answers, trigger,"
    " idempotent"
)
#: Columns added since the first release, added to an older file when it is opened. Jobs from
#: before projects keep project '' (no project's): no gateway claims, lists or returns them.
_ADDED = {
    "answers": "BLOB",
    "project": "TEXT NOT NULL DEFAULT ''",
    "trigger": "TEXT NOT NULL DEFAULT ''",
    "idempotent": "INTEGER NOT NULL DEFAULT 0",
}
_ACTIVE = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)
#: Jobs added in one transaction at most.
ADD_BATCH = 128


def _job(row: Sequence[Any]) -> Job:
    return Job(
        id=row[0],
        owner=row[1],
        function=row[2],
        arguments=bytes(row[3]),
        request_id=row[4],
        session_id=row[5],
        status=JobStatus(row[6]),
        attempts=row[7],
        result=None if row[8] is None else bytes(row[8]),
        error=None if row[9] is None else json.loads(row[9]),
        callback_url=row[10],
        callback_state=CallbackState(row[11]),
        callback_attempts=row[12],
        created=row[13],
        updated=row[14],
        finished=row[15],
        answers=_answers(row[16]),
        trigger=row[17],
        idempotent=bool(row[18]),
    )


_INSERT = (
    "INSERT OR IGNORE INTO jobs (id, owner, function, arguments, request_id, session_id, status,"
    " callback_url, callback_state, created, updated, project, trigger, error, finished, idempotent)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _row(job: Job, project: str) -> tuple[Any, ...]:
    """The values of `_INSERT` for `job`."""
    return (
        job.id,
        job.owner,
        job.function,
        job.arguments,
        job.request_id,
        job.session_id,
        job.status.value,
        job.callback_url,
        job.callback_state.value,
        job.created,
        job.created,
        project,
        job.trigger,
        None if job.error is None else json.dumps(job.error),
        job.finished,
        int(job.idempotent),
    )


def _settle_one(db: sqlite3.Connection, row: tuple[Any, ...]) -> bool:
    cursor = db.execute(
        "UPDATE jobs SET status = ?, result = ?, error = ?, updated = ?, finished = ?, run_after = ?,"
        " callback_state = ?, callback_due = ?, worker = NULL, lease_until = 0"
        " WHERE id = ? AND project = ? AND status = 'running' AND worker = ?",
        row,
    )
    return cursor.rowcount == 1


def _answers(value: str | bytes | None) -> bytes | None:
    # TEXT once json_patch has written it.
    return value.encode() if isinstance(value, str) else value


class SqliteJobStore:
    """The `JobStore` of one machine: the file at `path` (created, with its directory), for the
    jobs of `project`."""

    def __init__(self, path: Path, project: str) -> None:
        if not project:
            raise ValueError("a job store needs a project id")
        self.path = path
        self.project = project
        self._sqlite = SqliteThread(path, "jobs", "job store")
        #: The functions in this connection's `temp.served` (those the gateway serves).
        self._served: frozenset[str] = frozenset()
        self._run = self._sqlite.run
        #: Adds made while one transaction is on its way go together in the next.
        self._adds: Batcher[tuple[Job, int], None] = Batcher(self._add_many, ADD_BATCH)

    async def open(self) -> None:
        def setup(db: sqlite3.Connection) -> None:
            # Survives a killed process (the WAL is written before each commit returns); only a
            # power cut may lose the last transactions, which fsync on every one would cost.
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            have = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
            for column, kind in _ADDED.items():
                if column not in have:
                    db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
            db.executescript(_INDEXES)
            db.execute("CREATE TEMP TABLE IF NOT EXISTS served (function TEXT PRIMARY KEY) WITHOUT ROWID")

        await self._sqlite.open(setup)

    async def close(self) -> None:
        await self._sqlite.close()

    async def add(self, job: Job, max_queued: int) -> None:
        await self._adds.submit((job, max_queued))

    async def _add_many(self, adds: list[tuple[Job, int]]) -> list[BaseException | None]:
        """Adds made at once (a trigger records its batch of messages together) in one
        transaction, the queue counted once; each its own outcome: None, or `Overloaded`."""

        def add(db: sqlite3.Connection) -> list[BaseException | None]:
            db.execute("BEGIN IMMEDIATE")
            try:
                (active,) = db.execute(
                    "SELECT COUNT(*) FROM jobs WHERE project = ? AND status IN (?, ?)",
                    (self.project, *_ACTIVE),
                ).fetchone()
                outcomes: list[BaseException | None] = []
                for job, max_queued in adds:
                    if active >= max_queued and not job.status.finished:
                        outcomes.append(
                            Overloaded(
                                f"the job queue is full: {active} jobs are queued or running,"
                                f" the limit ([jobs] max_queued) is {max_queued}; try again later",
                                retry_after=1.0,
                            )
                        )
                        continue
                    inserted = db.execute(_INSERT, _row(job, self.project)).rowcount == 1
                    if inserted and not job.status.finished:
                        active += 1
                    outcomes.append(None)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return outcomes

        return await self._run(add)

    async def get(self, job_id: str) -> Job | None:
        row = await self._run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE id = ? AND project = ?", (job_id, self.project)
            ).fetchone()
        )
        return None if row is None else _job(row)

    async def list(self, owner: str, status: JobStatus | None, limit: int) -> Sequence[Job]:
        query, params = "project = ? AND owner = ?", [self.project, owner]
        if status is not None:
            query, params = "project = ? AND owner = ? AND status = ?", [self.project, owner, status.value]
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE {query} ORDER BY created DESC LIMIT ?", (*params, limit)
            ).fetchall()
        )
        return [_job(row) for row in rows]

    async def claim(self, worker: str, lease: float, functions: Collection[str]) -> Job | None:
        jobs = await self.claim_many(worker, lease, functions, 1)
        return jobs[0] if jobs else None

    async def claim_many(
        self, worker: str, lease: float, functions: Collection[str], limit: int
    ) -> Sequence[Job]:
        if not functions or limit < 1:
            return []
        now = time.time()
        served = frozenset(functions)  # the same object when given one: the runner's, per catalog
        changed = served is not self._served and served != self._served
        self._served = served

        def claim(db: sqlite3.Connection) -> Any:
            if changed:
                # This connection's own table of the catalog, written once per catalog change: a
                # claim then looks names up in its index (a list in the statement would be sorted
                # again at every claim: 5 ms for 10,000 functions, bench/job_claims.py).
                db.execute("DELETE FROM temp.served")
                db.executemany("INSERT OR IGNORE INTO temp.served VALUES (?)", [(f,) for f in served])
            # One statement: the jobs are claimed together or not at all.
            return db.execute(
                f"UPDATE jobs SET status = 'running', attempts = attempts + 1, worker = ?,"
                f" lease_until = ?, updated = ? WHERE id IN (SELECT id FROM jobs WHERE project = ?"
                f" AND status = 'queued' AND run_after <= ? AND function IN temp.served"
                f" ORDER BY run_after, created LIMIT ?) RETURNING {_COLUMNS}, run_after",
                (worker, now + lease, now, self.project, now, limit),
            ).fetchall()

        rows = await self._run(claim)
        # RETURNING comes in no promised order: the oldest first, as claimed.
        rows.sort(key=lambda row: (row[-1], row[13]))  # run_after, created
        return [_job(row[:-1]) for row in rows]

    async def release(self, worker: str, job_ids: Sequence[str]) -> None:
        if not job_ids:
            return
        await self._run(
            lambda db: db.executemany(
                "UPDATE jobs SET status = 'queued', attempts = attempts - 1, worker = NULL, lease_until = 0"
                " WHERE id = ? AND project = ? AND status = 'running' AND worker = ?",
                [(job_id, self.project, worker) for job_id in job_ids],
            )
        )

    async def renew(self, worker: str, job_ids: Sequence[str], lease: float) -> None:
        if not job_ids:
            return
        until = time.time() + lease
        await self._run(
            lambda db: db.executemany(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND project = ? AND status = 'running'"
                " AND worker = ?",
                [(until, job_id, self.project, worker) for job_id in job_ids],
            )
        )

    async def settle(self, job: Job, worker: str, run_after: float = 0.0) -> bool:
        return (await self.settle_many([(job, run_after)], worker))[0]

    async def settle_many(self, settles: Sequence[tuple[Job, float]], worker: str) -> Sequence[bool]:
        if not settles:
            return []
        now = time.time()
        rows = []
        for job, run_after in settles:
            job.updated = now
            if job.status.finished:
                job.finished = now
            error = None if job.error is None else json.dumps(job.error)
            rows.append(
                (
                    job.status.value,
                    job.result,
                    error,
                    now,
                    job.finished,
                    run_after,
                    job.callback_state.value,
                    now,
                    job.id,
                    self.project,
                    worker,
                )
            )

        def settle(db: sqlite3.Connection) -> list[bool]:
            if len(rows) == 1:
                return [_settle_one(db, rows[0])]
            db.execute("BEGIN IMMEDIATE")
            try:
                done = [_settle_one(db, row) for row in rows]
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return done

        return await self._run(settle)

    async def recover(self, max_attempts: int) -> int:
        now = time.time()
        lost = json.dumps({"code": "unavailable", "message": "the gateway running it stopped"})
        unknown = json.dumps(OUTCOME_UNKNOWN)

        def recover(db: sqlite3.Connection) -> int:
            db.execute("BEGIN IMMEDIATE")
            # Not idempotent: it may have had its effect, so it is not run again.
            failed = db.execute(
                "UPDATE jobs SET status = 'failed', error = ?, finished = ?, updated = ?, worker = NULL,"
                " callback_state = CASE callback_state WHEN 'none' THEN 'none' ELSE 'pending' END,"
                " callback_due = ? WHERE project = ? AND status = 'running' AND lease_until < ?"
                " AND idempotent = 0",
                (unknown, now, now, now, self.project, now),
            ).rowcount
            dead = db.execute(
                "UPDATE jobs SET status = 'dead', error = ?, finished = ?, updated = ?, worker = NULL,"
                " callback_state = CASE callback_state WHEN 'none' THEN 'none' ELSE 'pending' END,"
                " callback_due = ? WHERE project = ? AND status = 'running' AND lease_until < ?"
                " AND attempts >= ?",
                (lost, now, now, now, self.project, now, max_attempts),
            ).rowcount
            queued = db.execute(
                "UPDATE jobs SET status = 'queued', run_after = ?, updated = ?, worker = NULL"
                " WHERE project = ? AND status = 'running' AND lease_until < ?",
                (now, now, self.project, now),
            ).rowcount
            db.execute("COMMIT")
            return int(failed + dead + queued)

        return await self._run(recover)

    async def requeue(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        now = time.time()
        marks = ", ".join("?" * len(from_status))
        row = await self._run(
            lambda db: db.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, result = NULL, error = NULL,"
                " finished = NULL, run_after = ?, updated = ?,"
                " callback_state = CASE callback_state WHEN 'none' THEN 'none' ELSE 'pending' END,"
                " callback_attempts = 0"
                f" WHERE id = ? AND project = ? AND owner = ? AND status IN ({marks}) RETURNING {_COLUMNS}",
                (now, now, job_id, self.project, owner, *(s.value for s in from_status)),
            ).fetchone()
        )
        return None if row is None else _job(row)

    async def answer(self, job_id: str, owner: str, answers: bytes) -> Job | None:
        # json_patch merges in one statement, so answers sent at once are all kept.
        row = await self._run(
            lambda db: db.execute(
                "UPDATE jobs SET answers = json_patch(coalesce(answers, '{}'), ?), updated = ?"
                f" WHERE id = ? AND project = ? AND owner = ? AND status = 'failed' RETURNING {_COLUMNS}",
                (answers.decode(), time.time(), job_id, self.project, owner),
            ).fetchone()
        )
        return None if row is None else _job(row)

    async def cancel(self, job_id: str, owner: str, from_status: Sequence[JobStatus]) -> Job | None:
        now = time.time()
        marks = ", ".join("?" * len(from_status))
        row = await self._run(
            lambda db: db.execute(
                "UPDATE jobs SET status = 'cancelled', finished = ?, updated = ?, worker = NULL,"
                " lease_until = 0,"
                " callback_state = CASE callback_state WHEN 'none' THEN 'none' ELSE 'failed' END"
                f" WHERE id = ? AND project = ? AND owner = ? AND status IN ({marks}) RETURNING {_COLUMNS}",
                (now, now, job_id, self.project, owner, *(s.value for s in from_status)),
            ).fetchone()
        )
        return None if row is None else _job(row)

    async def take_callbacks(self, limit: int, hold: float) -> Sequence[Job]:
        now = time.time()
        rows = await self._run(
            lambda db: db.execute(
                f"UPDATE jobs SET callback_due = ? WHERE id IN (SELECT id FROM jobs WHERE project = ?"
                f" AND callback_state = 'pending' AND finished IS NOT NULL AND callback_due <= ?"
                f" ORDER BY callback_due LIMIT ?) RETURNING {_COLUMNS}",
                (now + hold, self.project, now, limit),
            ).fetchall()
        )
        return [_job(row) for row in rows]

    async def callback_done(self, job_id: str, state: CallbackState, attempts: int, due: float) -> None:
        await self._run(
            lambda db: db.execute(
                "UPDATE jobs SET callback_state = ?, callback_attempts = ?, callback_due = ?"
                " WHERE id = ? AND project = ?",
                (state.value, attempts, due, job_id, self.project),
            )
        )

    async def purge(self, finished_before: float) -> int:
        cursor = await self._run(
            lambda db: db.execute(
                "DELETE FROM jobs WHERE project = ? AND finished IS NOT NULL AND finished < ?"
                " AND callback_state != 'pending'",
                (self.project, finished_before),
            )
        )
        return int(cursor.rowcount)

    async def count_active(self) -> int:
        row = await self._run(
            lambda db: db.execute(
                "SELECT COUNT(*) FROM jobs WHERE project = ? AND status IN (?, ?)", (self.project, *_ACTIVE)
            ).fetchone()
        )
        return int(row[0])
