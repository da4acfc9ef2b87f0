"""Sessions: what a caller asked, which function ran with which arguments, and what came back.

Kept in SQLite under the data directory, bounded three ways: a session
expires `ttl` seconds after its last use, at most `max_sessions` are kept (the
least recently used go first), and each keeps its last `max_turns` turns.
Results are stored trimmed to `MAX_RESULT_CHARS` of JSON.

`Sessions` is the seam: the gateway may hand the router another store (Redis, shared by every
replica: gateway/state/redis_sessions.py) with the same TTL and turn bound.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

MAX_RESULT_CHARS = 4096
MAX_SESSION_ID = 128


@dataclass(frozen=True, slots=True)
class Turn:
    """One prompt and what the router did with it."""

    prompt: str
    function: str | None
    arguments: dict[str, Any]
    result: Any
    at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "function": self.function,
            "arguments": self.arguments,
            "result": self.result,
            "at": self.at,
        }


class Sessions(Protocol):
    """Where sessions live. Called from the router's worker threads, never on the event loop."""

    ttl: float

    def history(self, session_id: str, limit: int | None = None) -> list[Turn]:
        """The session's last `limit` (default: all kept) turns, oldest first; empty for an
        unknown or expired session."""
        ...

    def record(
        self, session_id: str, prompt: str, function: str | None, arguments: Mapping[str, Any], result: Any
    ) -> None:
        """Append a turn; the session lives `ttl` seconds from now."""
        ...

    def close(self) -> None: ...


def trimmed_result(result: Any) -> str:
    """`result` as JSON, trimmed to MAX_RESULT_CHARS (as a {"truncated": ...} object)."""
    text = json.dumps(result, default=str)
    if len(text) > MAX_RESULT_CHARS:
        text = json.dumps({"truncated": text[:MAX_RESULT_CHARS]})
    return text


class SessionStore:
    """Thread-safe; one connection guarded by a lock (turns are small and rare next to routing)."""

    def __init__(
        self,
        path: Path,
        *,
        ttl: float,
        max_sessions: int,
        max_turns: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.ttl = ttl
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        self._clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        with self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, last_used REAL NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS turns ("
                " session TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL,"
                " prompt TEXT NOT NULL, function TEXT, arguments TEXT NOT NULL, result TEXT NOT NULL)"
            )
            self._db.execute("CREATE INDEX IF NOT EXISTS turns_by_session ON turns (session, seq)")
            self._db.execute("CREATE INDEX IF NOT EXISTS sessions_by_use ON sessions (last_used)")

    def history(self, session_id: str, limit: int | None = None) -> list[Turn]:
        """The session's turns, oldest first (empty for an unknown or expired session)."""
        cutoff = self._clock() - self.ttl
        with self._lock:
            row = self._db.execute("SELECT last_used FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None or row[0] < cutoff:
                return []
            rows = self._db.execute(
                "SELECT prompt, function, arguments, result, at FROM turns WHERE session = ?"
                " ORDER BY seq DESC LIMIT ?",
                (session_id, limit or self.max_turns),
            ).fetchall()
        return [Turn(p, f, json.loads(a), json.loads(r), at) for p, f, a, r, at in reversed(rows)]

    def record(
        self, session_id: str, prompt: str, function: str | None, arguments: Mapping[str, Any], result: Any
    ) -> None:
        """Append a turn, then enforce the TTL and both size bounds."""
        now = self._clock()
        result_json = trimmed_result(result)
        with self._lock, self._db:
            row = self._db.execute("SELECT last_used FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is not None and row[0] < now - self.ttl:
                self._db.execute("DELETE FROM turns WHERE session = ?", (session_id,))
            self._db.execute(
                "INSERT INTO sessions (id, last_used) VALUES (?, ?)"
                " ON CONFLICT(id) DO UPDATE SET last_used = excluded.last_used",
                (session_id, now),
            )
            self._db.execute(
                "INSERT INTO turns (session, at, prompt, function, arguments, result)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, now, prompt, function, json.dumps(dict(arguments), default=str), result_json),
            )
            self._db.execute(
                "DELETE FROM turns WHERE session = ? AND seq NOT IN"
                " (SELECT seq FROM turns WHERE session = ? ORDER BY seq DESC LIMIT ?)",
                (session_id, session_id, self.max_turns),
            )
            self._prune(now)

    def _prune(self, now: float) -> None:
        # Both queries walk the last_used index, so pruning costs what it removes.
        doomed = self._db.execute(
            "SELECT id FROM sessions WHERE last_used < ? UNION"
            " SELECT id FROM (SELECT id FROM sessions ORDER BY last_used DESC LIMIT -1 OFFSET ?)",
            (now - self.ttl, self.max_sessions),
        ).fetchall()
        for (session_id,) in doomed:
            self._db.execute("DELETE FROM turns WHERE session = ?", (session_id,))
            self._db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute(
                "SELECT COUNT(*) FROM sessions WHERE last_used >= ?", (self._clock() - self.ttl,)
            ).fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()
