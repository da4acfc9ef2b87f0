"""`TriggerTicks`: the state every replica of a project agrees on for its triggers.

A tick of a schedule (a trigger and the Unix time it is due) is fired by whichever gateway
claims it first: a row inserted or ignored in SQLite (gateways on one machine sharing the jobs
file), a `SET NX` with an expiry in Redis (redis_ticks.py). A paused trigger is paused for all.
A lease names the one gateway that listens for a source every gateway would hear (NOTIFY).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Protocol

from toolmesh.gateway.state.sqlite_thread import SqliteThread

#: Seconds a tick's claim is kept: long past any clock skew between replicas.
TICK_MEMORY = 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trigger_ticks (
    project TEXT NOT NULL, trigger TEXT NOT NULL, tick INTEGER NOT NULL, claimed REAL NOT NULL,
    PRIMARY KEY (project, trigger, tick)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trigger_leases (
    project TEXT NOT NULL, trigger TEXT NOT NULL, holder TEXT NOT NULL, until REAL NOT NULL,
    PRIMARY KEY (project, trigger)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trigger_paused (
    project TEXT NOT NULL, trigger TEXT NOT NULL, paused INTEGER NOT NULL,
    PRIMARY KEY (project, trigger)
) WITHOUT ROWID;
"""


class TriggerTicks(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def claim(self, trigger: str, tick: int) -> bool:
        """Whether this gateway fires `trigger`'s tick due at `tick` (ms): True for one caller only."""
        ...

    async def paused(self, trigger: str) -> bool | None:
        """Whether `trigger` was paused or resumed (None: neither since the project began)."""
        ...

    async def set_paused(self, trigger: str, paused: bool) -> None: ...

    async def lease(self, trigger: str, holder: str, seconds: float) -> bool:
        """Take or renew `trigger`'s lease for `holder` for `seconds`: True while `holder` has it
        (one holder at a time; a lease not renewed is free once its time is up)."""
        ...

    async def release(self, trigger: str, holder: str) -> None:
        """Give the lease up now (when `holder` has it), for another gateway to take at once."""
        ...


class SqliteTicks:
    """`TriggerTicks` in a SQLite file (the jobs file: gateways sharing it share one queue)."""

    def __init__(self, path: Path, project: str) -> None:
        self.path = path
        self.project = project
        self._sqlite = SqliteThread(path, "ticks", "trigger ticks")
        self._run = self._sqlite.run
        self._last_purge = 0.0

    async def open(self) -> None:
        def setup(db: sqlite3.Connection) -> None:
            db.executescript(_SCHEMA)

        await self._sqlite.open(setup)

    async def close(self) -> None:
        await self._sqlite.close()

    async def claim(self, trigger: str, tick: int) -> bool:
        now = time.time()

        def claim(db: sqlite3.Connection) -> bool:
            if now - self._last_purge > TICK_MEMORY / 4:
                self._last_purge = now
                db.execute("DELETE FROM trigger_ticks WHERE claimed < ?", (now - TICK_MEMORY,))
            cursor = db.execute(
                "INSERT OR IGNORE INTO trigger_ticks (project, trigger, tick, claimed) VALUES (?, ?, ?, ?)",
                (self.project, trigger, tick, now),
            )
            return cursor.rowcount == 1

        return await self._run(claim)

    async def paused(self, trigger: str) -> bool | None:
        row = await self._run(
            lambda db: db.execute(
                "SELECT paused FROM trigger_paused WHERE project = ? AND trigger = ?", (self.project, trigger)
            ).fetchone()
        )
        return None if row is None else bool(row[0])

    async def set_paused(self, trigger: str, paused: bool) -> None:
        await self._run(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO trigger_paused (project, trigger, paused) VALUES (?, ?, ?)",
                (self.project, trigger, int(paused)),
            )
        )

    async def lease(self, trigger: str, holder: str, seconds: float) -> bool:
        now = time.time()

        def take(db: sqlite3.Connection) -> bool:
            db.execute(
                "INSERT INTO trigger_leases (project, trigger, holder, until) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (project, trigger)"
                " DO UPDATE SET holder = excluded.holder, until = excluded.until"
                " WHERE trigger_leases.holder = excluded.holder OR trigger_leases.until < ?",
                (self.project, trigger, holder, now + seconds, now),
            )
            row = db.execute(
                "SELECT holder FROM trigger_leases WHERE project = ? AND trigger = ?", (self.project, trigger)
            ).fetchone()
            return row is not None and row[0] == holder

        return await self._run(take)

    async def release(self, trigger: str, holder: str) -> None:
        await self._run(
            lambda db: db.execute(
                "DELETE FROM trigger_leases WHERE project = ? AND trigger = ? AND holder = ?",
                (self.project, trigger, holder),
            )
        )
