"""Examples learned from use: prompts that reached the right function, kept per function version.

A prompt is learned when the router chose a function and the call succeeded, or when a
caller says which function was right for a routing (`POST /v1/route/feedback`); either
only for a caller holding the `@learn` permission (gateway/core/auth.py). Each learned
prompt is stored with the *version* of the function it was learned for: a hash of the
text the router reads about it (name, description, parameters). When that changes, the
old prompts no longer apply and are not loaded (nor counted); they stay in the store
until `toolmesh router examples remove` or until newer ones push them out.

Bounded: at most `MAX_LEARNED` prompts per function version, the most recently
confirmed ones (a prompt learned again moves to the front), so old habits decay as new
ones arrive, and no caller can grow the index without limit.

`ExampleStore` is the seam: SQLite on one machine (`LearnedExamples`, under the router's
data directory); Redis where `[state]` configures it (gateway/state/redis_learning.py), so what
one replica learns every replica routes with. `Routings` remembers what each routing id was asked,
for feedback to refer to: in this process (`RecentRoutings`), or in Redis, so that feedback may
reach another replica than the one that routed.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

#: Learned prompts kept per function version (the most recent ones).
MAX_LEARNED = 20
#: Longest prompt learned, in characters (longer ones are cut).
MAX_LEARNED_CHARS = 1000
#: Routings remembered in this process for feedback to refer to by id; the oldest go first.
REMEMBERED_ROUTINGS = 10_000


def learnable(prompt: str) -> str:
    """The text a prompt is learned as: whitespace collapsed, cut to MAX_LEARNED_CHARS."""
    return " ".join(prompt.split())[:MAX_LEARNED_CHARS]


@dataclass(frozen=True, slots=True)
class LearnedExample:
    function: str
    version: str
    prompt: str
    principal: str
    at: float


class ExampleStore(Protocol):
    """Where learned examples live. Called from the router's worker threads."""

    def add(self, function: str, version: str, prompt: str, principal: str) -> list[str]:
        """Learn `prompt` for this function version; returns its learned prompts now, newest first."""
        ...

    def current(self, versions: Mapping[str, str]) -> dict[str, list[str]]:
        """Per function in `versions` (function -> its version), its learned prompts, newest first."""
        ...

    def listing(self, function: str | None = None) -> list[LearnedExample]:
        """Every stored example (of one function), all versions, newest first."""
        ...

    def remove(self, function: str, prompt: str | None = None) -> int:
        """Forget one prompt of a function, or all of them; how many were removed."""
        ...

    def close(self) -> None: ...


class LearnedExamples:
    """`ExampleStore` in SQLite: one table, one row per (function, version, prompt)."""

    def __init__(self, path: Path, max_per_function: int = MAX_LEARNED) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.max_per_function = max_per_function
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS learned (function TEXT NOT NULL, version TEXT NOT NULL,"
            " prompt TEXT NOT NULL, principal TEXT NOT NULL, at REAL NOT NULL,"
            " PRIMARY KEY (function, version, prompt))"
        )

    def add(self, function: str, version: str, prompt: str, principal: str) -> list[str]:
        prompt = learnable(prompt)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO learned VALUES (?, ?, ?, ?, ?)",
                    (function, version, prompt, principal, time.time()),
                )
                self._db.execute(
                    "DELETE FROM learned WHERE function = ? AND version = ? AND prompt NOT IN"
                    " (SELECT prompt FROM learned WHERE function = ? AND version = ?"
                    " ORDER BY at DESC LIMIT ?)",
                    (function, version, function, version, self.max_per_function),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            rows = self._db.execute(
                "SELECT prompt FROM learned WHERE function = ? AND version = ? ORDER BY at DESC",
                (function, version),
            ).fetchall()
        return [row[0] for row in rows]

    def current(self, versions: Mapping[str, str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        with self._lock:
            rows = self._db.execute(
                "SELECT function, version, prompt FROM learned ORDER BY at DESC"
            ).fetchall()
        for function, version, prompt in rows:
            if versions.get(function) == version:
                found.setdefault(function, []).append(prompt)
        return found

    def listing(self, function: str | None = None) -> list[LearnedExample]:
        query = "SELECT function, version, prompt, principal, at FROM learned"
        arguments: tuple[str, ...] = ()
        if function is not None:
            query, arguments = query + " WHERE function = ?", (function,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY function, at DESC", arguments).fetchall()
        return [LearnedExample(*row) for row in rows]

    def remove(self, function: str, prompt: str | None = None) -> int:
        with self._lock:
            if prompt is None:
                cursor = self._db.execute("DELETE FROM learned WHERE function = ?", (function,))
            else:
                cursor = self._db.execute(
                    "DELETE FROM learned WHERE function = ? AND prompt = ?", (function, prompt)
                )
        return cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Routings(Protocol):
    """What recent routings were asked, by routing id. Called from the router's worker threads."""

    def remember(self, routing_id: str, prompt: str) -> None:
        """Keep `prompt` under `routing_id`; must not make the routing wait (nor fail it)."""
        ...

    def prompt(self, routing_id: str) -> str | None:
        """The prompt of a remembered routing (None: unknown, or forgotten)."""
        ...


class RecentRoutings:
    """`Routings` in this process: the last `REMEMBERED_ROUTINGS`."""

    def __init__(self, size: int = REMEMBERED_ROUTINGS) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._prompts: OrderedDict[str, str] = OrderedDict()

    def remember(self, routing_id: str, prompt: str) -> None:
        with self._lock:
            self._prompts[routing_id] = prompt
            if len(self._prompts) > self._size:
                self._prompts.popitem(last=False)

    def prompt(self, routing_id: str) -> str | None:
        with self._lock:
            return self._prompts.get(routing_id)
