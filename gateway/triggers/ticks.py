"""`TriggerTicks`: the state every replica of a project agrees on for its triggers.

A tick of a schedule (a trigger and the Unix time it is due) is fired by whichever gateway
claims it first: a row inserted or ignored in SQLite (gateways on one machine sharing the jobs
file), a `SET NX` with an expiry in Redis (redis_ticks.py). A paused trigger is paused for all.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

T = TypeVar("T")

#: Seconds a tick's claim is kept: long past any clock skew between replicas.
TICK_MEMORY = 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trigger_ticks (
    project TEXT NOT NULL, trigger TEXT NOT NULL, tick INTEGER NOT NULL, claimed REAL NOT NULL,
    PRIMARY KEY (project, trigger, tick)
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


class SqliteTicks:
    """`TriggerTicks` in a SQLite file (the jobs file: gateways sharing it share one queue)."""

    def __init__(self, path: Path, project: str) -> None:
        self.path = path
        self.project = project
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="toolmesh-ticks")
        self._db: sqlite3.Connection | None = None
        self._last_purge = 0.0

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            assert self._db is not None, "the trigger ticks are not open"
            return work(self._db)

        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    async def open(self) -> None:
        def connect() -> None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            self._db = db

        await asyncio.get_running_loop().run_in_executor(self._thread, connect)

    async def close(self) -> None:
        if self._db is not None:
            await self._run(lambda db: db.close())
            self._db = None
        self._thread.shutdown(wait=True)

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
