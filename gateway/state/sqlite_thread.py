"""One SQLite connection on one thread of its own, for the gateway's SQLite stores (jobs, trigger
ticks, functions' state): the event loop never waits on the disk, and the connection is only
ever used from the thread that opened it."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class SqliteThread:
    def __init__(self, path: Path, name: str, what: str) -> None:
        self.path = path
        self._what = what
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"toolmesh-{name}")
        self._db: sqlite3.Connection | None = None

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(connection)` on the store's thread."""

        def call() -> T:
            assert self._db is not None, f"the {self._what} is not open"
            return work(self._db)

        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    async def open(self, setup: Callable[[sqlite3.Connection], None]) -> None:
        """Open the file (and its directory) in autocommit and WAL mode, then `setup` it (its
        schema); multi-statement changes say BEGIN IMMEDIATE themselves."""

        def connect() -> None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=10)
            db.execute("PRAGMA journal_mode=WAL")
            setup(db)
            self._db = db

        await asyncio.get_running_loop().run_in_executor(self._thread, connect)

    async def close(self) -> None:
        if self._db is not None:
            await self.run(lambda db: db.close())
            self._db = None
        self._thread.shutdown(wait=True)
