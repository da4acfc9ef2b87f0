"""Functions' durable state in one SQLite file: WAL, one connection on a thread of its own.

Each write is one `BEGIN IMMEDIATE` transaction (SQLite's write lock), so concurrent `incr`s from
any number of pods, and of gateways sharing the file on one machine, never lose an update. A
row per key; a row per runtime holds its version counter and how many rows it has, so the key
limit costs no count. Expired rows are treated as missing at once and deleted when their key is
written again or when the runtime reaches its key limit.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from toolmesh.gateway.state.function_state import NotANumber, TooManyKeys
from toolmesh.gateway.state.sqlite_thread import SqliteThread

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS function_state (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    version INTEGER NOT NULL,
    expires REAL,
    PRIMARY KEY (ns, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS function_state_expiry ON function_state (ns, expires) WHERE expires IS NOT NULL;
CREATE TABLE IF NOT EXISTS function_state_runtimes (
    ns TEXT PRIMARY KEY,
    version INTEGER NOT NULL DEFAULT 0,
    keys INTEGER NOT NULL DEFAULT 0
);
"""
_LIVE = "(expires IS NULL OR expires > ?)"
_WRITE = "INSERT OR REPLACE INTO function_state (ns, key, value, version, expires) VALUES (?, ?, ?, ?, ?)"


class SqliteFunctionStore:
    """The `FunctionStore` of one machine: the file at `path` (created, with its directory)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sqlite = SqliteThread(path, "state", "function state store")
        self._run = self._sqlite.run

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def transaction(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                done = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return done

        return await self._run(transaction)

    async def open(self) -> None:
        def setup(db: sqlite3.Connection) -> None:
            # A killed gateway loses nothing (the WAL is written before each commit returns).
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)

        await self._sqlite.open(setup)

    async def close(self) -> None:
        await self._sqlite.close()

    async def get(self, ns: str, key: str) -> tuple[bytes, int] | None:
        def get(db: sqlite3.Connection) -> tuple[bytes, int] | None:
            row = db.execute(
                f"SELECT value, version FROM function_state WHERE ns = ? AND key = ? AND {_LIVE}",
                (ns, key, time.time()),
            ).fetchone()
            return None if row is None else (row[0].encode(), row[1])

        return await self._run(get)

    async def put(
        self, ns: str, key: str, value: bytes, ttl: float, expected: int | None, max_keys: int
    ) -> int:
        def put(db: sqlite3.Connection) -> int:
            now = time.time()
            row = db.execute(
                "SELECT version, expires FROM function_state WHERE ns = ? AND key = ?", (ns, key)
            ).fetchone()
            live = row is not None and (row[1] is None or row[1] > now)
            if expected is not None and (row[0] if live else 0) != expected:
                return 0
            version = _next_version(db, ns, now, max_keys, new_row=row is None)
            db.execute(_WRITE, (ns, key, value.decode(), version, now + ttl if ttl > 0 else None))
            return version

        return await self._write(put)

    async def incr(self, ns: str, key: str, by: int | float, max_keys: int) -> bytes:
        def incr(db: sqlite3.Connection) -> bytes:
            now = time.time()
            row = db.execute(
                "SELECT value, expires FROM function_state WHERE ns = ? AND key = ?", (ns, key)
            ).fetchone()
            live = row is not None and (row[1] is None or row[1] > now)
            current = json.loads(row[0]) if live else 0
            if isinstance(current, bool) or not isinstance(current, int | float):
                raise NotANumber(key)
            value = json.dumps(current + by).encode()
            if value in (b"Infinity", b"-Infinity", b"NaN"):
                raise NotANumber(key)
            version = _next_version(db, ns, now, max_keys, new_row=row is None)
            db.execute(_WRITE, (ns, key, value.decode(), version, row[1] if live else None))
            return value

        return await self._write(incr)

    async def delete(self, ns: str, key: str) -> bool:
        def delete(db: sqlite3.Connection) -> bool:
            row = db.execute(
                "DELETE FROM function_state WHERE ns = ? AND key = ? RETURNING expires", (ns, key)
            ).fetchone()
            if row is None:
                return False
            db.execute("UPDATE function_state_runtimes SET keys = keys - 1 WHERE ns = ?", (ns,))
            return bool(row[0] is None or row[0] > time.time())

        return await self._write(delete)

    async def keys(self, ns: str, prefix: str, limit: int) -> list[str]:
        def keys(db: sqlite3.Connection) -> list[str]:
            # A range on the primary key rather than LIKE, whose wildcards a prefix may hold: the
            # keys that start with `prefix` come first, together, from `prefix` on.
            rows = db.execute(
                f"SELECT key FROM function_state WHERE ns = ? AND key >= ? AND {_LIVE} ORDER BY key LIMIT ?",
                (ns, prefix, time.time(), limit),
            )
            found = []
            for (key,) in rows:
                if not key.startswith(prefix):
                    break
                found.append(key)
            return found

        return await self._run(keys)


def _next_version(db: sqlite3.Connection, ns: str, now: float, max_keys: int, *, new_row: bool) -> int:
    """The runtime's next version, counting a new row against its key limit (inside the write)."""
    db.execute("INSERT OR IGNORE INTO function_state_runtimes (ns) VALUES (?)", (ns,))
    if new_row:
        (held,) = db.execute("SELECT keys FROM function_state_runtimes WHERE ns = ?", (ns,)).fetchone()
        if held >= max_keys:
            purged = db.execute(
                "DELETE FROM function_state WHERE ns = ? AND expires IS NOT NULL AND expires <= ?", (ns, now)
            ).rowcount
            db.execute("UPDATE function_state_runtimes SET keys = keys - ? WHERE ns = ?", (purged, ns))
            if held - purged >= max_keys:
                raise TooManyKeys(ns)
    (version,) = db.execute(
        "UPDATE function_state_runtimes SET version = version + 1, keys = keys + ?"
        " WHERE ns = ? RETURNING version",
        (1 if new_row else 0, ns),
    ).fetchone()
    return int(version)
