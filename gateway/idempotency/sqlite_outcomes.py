"""Keyed calls' records in a SQLite file of the project's data directory: every gateway on this
machine that uses the directory (two `toolmesh up` behind one proxy) shares them. A claim is one
`BEGIN IMMEDIATE` transaction, so two gateways cannot both take a key."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from toolmesh.errors import StateUnavailable
from toolmesh.gateway.idempotency.outcome_store import Claim, KeyedRecord, KeyState
from toolmesh.gateway.state.sqlite_thread import SqliteThread

T = TypeVar("T")
log = logging.getLogger("toolmesh.gateway")

SCHEMA = """
CREATE TABLE IF NOT EXISTS keyed_calls (
    id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_until REAL NOT NULL,
    outcome BLOB NOT NULL DEFAULT x'',
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS keyed_calls_expires ON keyed_calls (expires);
"""
#: Seconds between two sweeps of expired records (a claim finds an expired one stale anyway).
SWEEP_EVERY = 60.0


class SqliteOutcomes:
    def __init__(self, path: Path) -> None:
        self._db = SqliteThread(path, "idempotency", "idempotency store")
        self._swept = 0.0

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on the store's thread; a file that fails (locked past its timeout, disk full) is
        the shared state failing: a retryable 503 before the call runs, never a 500."""
        try:
            return await self._db.run(work)
        except sqlite3.Error as exc:
            log.error(f"the Idempotency-Key store {self._db.path} failed: {exc}")
            raise StateUnavailable(
                "the gateway's Idempotency-Key store cannot be written; try again shortly", retry_after=1.0
            ) from None

    async def open(self) -> None:
        def setup(db: sqlite3.Connection) -> None:
            db.executescript(SCHEMA)

        await self._db.open(setup)

    async def claim(self, record: str, claim: Claim) -> KeyedRecord | None:
        sweep = time.monotonic() - self._swept > SWEEP_EVERY
        if sweep:
            self._swept = time.monotonic()

        def work(db: sqlite3.Connection) -> KeyedRecord | None:
            now = time.time()
            db.execute("BEGIN IMMEDIATE")
            try:
                if sweep:
                    db.execute("DELETE FROM keyed_calls WHERE expires <= ?", (now,))
                row = db.execute(
                    "SELECT fingerprint, state, owner, lease_until, outcome, expires FROM keyed_calls"
                    " WHERE id = ?",
                    (record,),
                ).fetchone()
                if row is not None and row[5] > now:
                    state = KeyState(row[1])
                    lapsed = state is KeyState.RUNNING and row[3] < now
                    if not (lapsed and claim.take_lapsed and row[0] == claim.fingerprint):
                        return KeyedRecord(row[0], state, row[2], lapsed, bytes(row[4]))
                db.execute(
                    "INSERT OR REPLACE INTO keyed_calls (id, fingerprint, state, owner, lease_until, expires)"
                    " VALUES (?, ?, 'running', ?, ?, ?)",
                    (record, claim.fingerprint, claim.owner, now + claim.lease, now + claim.ttl),
                )
                return None
            finally:
                db.execute("COMMIT")

        return await self._run(work)

    async def renew(self, record: str, owner: str, lease: float) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "UPDATE keyed_calls SET lease_until = ? WHERE id = ? AND owner = ? AND state = 'running'",
                (time.time() + lease, record, owner),
            )
            return cursor.rowcount == 1

        return await self._run(work)

    async def finish(self, record: str, owner: str, state: KeyState, outcome: bytes, ttl: float) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE keyed_calls SET state = ?, outcome = ?, expires = ? WHERE id = ? AND owner = ?",
                (state.value, outcome, time.time() + ttl, record, owner),
            )

        await self._run(work)

    async def release(self, record: str, owner: str) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "DELETE FROM keyed_calls WHERE id = ? AND owner = ? AND state = 'running'", (record, owner)
            )

        await self._run(work)

    async def aclose(self) -> None:
        await self._db.close()
