"""Examples learned from use: prompts that reached the right function, kept per function version.

A prompt is learned when a caller says which function was right for a routing (`POST
/v1/route/feedback`), or confirms a call the router chose; either only for a caller holding the
`@learn` permission (gateway/core/auth.py). It is unlearned by feedback that says a routing's
match was wrong, or names another function, and by `toolmesh router examples remove`. Each learned
prompt is stored with the *version* of the function it was learned for: a hash of the
text the router reads about it (name, description, parameters). When that changes, the
old prompts no longer apply and are not loaded (nor counted); they stay in the store
until `toolmesh router examples remove` or until newer ones push them out.

Bounded: at most `MAX_LEARNED` prompts per function version, the most recently
confirmed ones (a prompt learned again moves to the front), so old habits decay as new
ones arrive, and no caller can grow the index without limit.

Feedback corrects as well as teaches: `Routings` remembers what each routing id was asked and
which function it matched, so feedback naming another function (or saying the match was wrong)
also removes what the wrong match taught, the same prompt and its near-duplicates
(`near_duplicates`), from that function's examples.

`ExampleStore` is the seam: SQLite on one machine (`LearnedExamples`, under the router's
data directory); Redis where `[state]` configures it (gateway/state/redis_learning.py), so what
one replica learns every replica routes with. Every change reaches every router sharing the
store before its next route: Redis announces it on the state feed; SQLite writes it to a change
log in the same file, which each router reads before routing (`changed`, a µs check when nothing
changed), so `toolmesh router examples remove` or another gateway process on the same data
directory takes effect at once. `Routings` keeps each routing's prompt and match for feedback to
refer to: in this process (`RecentRoutings`), or in Redis, so that feedback may reach another
replica than the one that routed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from toolmesh.router.embedding.embedder import Embedder

log = logging.getLogger("toolmesh.router")

#: Learned prompts kept per function version (the most recent ones).
MAX_LEARNED = 20
#: Longest prompt learned, in characters (longer ones are cut).
MAX_LEARNED_CHARS = 1000
#: Routings remembered in this process for feedback to refer to by id; the oldest go first.
REMEMBERED_ROUTINGS = 10_000
#: Cosine (the router's embedding) from which a learned example counts as the same request as a
#: prompt, for feedback that removes what a wrong match taught. Measured on BFCL's and APIBench
#: TorchHub's prompts (bench/router_unlearn.py): two different requests for one function score
#: 0.88-0.89 at their 99th percentile (0.2-0.3 % of pairs reach 0.92), a prompt and its
#: rewording (case and punctuation, a word dropped or swapped, "please") 0.93-0.94 at their 5th
#: (95-97 % reach 0.92).
NEAR_DUPLICATE_COSINE = 0.92
#: Changes kept in SQLite's change log; a router further behind than that re-reads every function.
CHANGES_KEPT = 1000


def learnable(prompt: str) -> str:
    """The text a prompt is learned as: whitespace collapsed, cut to MAX_LEARNED_CHARS."""
    return " ".join(prompt.split())[:MAX_LEARNED_CHARS]


def normalised(prompt: str) -> str:
    """A prompt compared for sameness: case, accents, punctuation and spacing set aside."""
    folded = unicodedata.normalize("NFKD", prompt.casefold())
    kept = "".join(c if c.isalnum() else " " for c in folded if not unicodedata.combining(c))
    return " ".join(kept.split())


def near_duplicates(
    prompt: str, prompts: Sequence[str], embedder: Embedder, min_cosine: float = NEAR_DUPLICATE_COSINE
) -> list[str]:
    """Those of `prompts` that ask what `prompt` asks: the same text once normalised, or an
    embedding at least `min_cosine` close."""
    if not prompts:
        return []
    vectors = embedder.embed([prompt, *prompts])
    cosines = vectors[1:] @ vectors[0]
    same = normalised(prompt)
    return [
        p
        for p, cosine in zip(prompts, np.asarray(cosines), strict=True)
        if normalised(p) == same or cosine >= min_cosine
    ]


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

    def changed(self) -> Sequence[str] | None:
        """The functions whose examples someone else (another process, another connection)
        changed since the last call; None when too many changed to say (read them all again).
        Called before every route: must cost next to nothing when nothing changed."""
        ...

    def close(self) -> None: ...


class LearnedExamples:
    """`ExampleStore` in SQLite: one row per (function, version, prompt), and a change log.

    The log (`learned_changes`: an increasing sequence number and the function changed) is
    written in the same transaction as each change, so another connection to the file (the CLI,
    another gateway process) tells `changed` which functions to read again. `PRAGMA
    data_version` says whether anyone else committed since it was last asked, without reading
    a page: the check before each route."""

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
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS learned_changes"
            " (seq INTEGER PRIMARY KEY AUTOINCREMENT, function TEXT NOT NULL)"
        )
        self._data_version = self._db.execute("PRAGMA data_version").fetchone()[0]
        #: The last change this connection has read (what came before is loaded with the index).
        self._seen: int = self._db.execute("SELECT coalesce(max(seq), 0) FROM learned_changes").fetchone()[0]

    def _log(self, function: str) -> int:
        """Record a change to `function`, inside the caller's transaction; keep the log bounded."""
        seq = (
            self._db.execute("INSERT INTO learned_changes (function) VALUES (?)", (function,)).lastrowid or 0
        )
        self._db.execute("DELETE FROM learned_changes WHERE seq <= ?", (seq - CHANGES_KEPT,))
        return seq

    def _wrote(self, seq: int) -> None:
        """After committing change `seq`: when no one else committed since `changed` last looked,
        every change up to it is this connection's own, already applied: nothing to read again."""
        if self._db.execute("PRAGMA data_version").fetchone()[0] == self._data_version:
            self._seen = seq

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
                seq = self._log(function)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._wrote(seq)
            rows = self._db.execute(
                "SELECT prompt FROM learned WHERE function = ? AND version = ? ORDER BY at DESC",
                (function, version),
            ).fetchall()
        return [row[0] for row in rows]

    def current(self, versions: Mapping[str, str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        with self._lock:
            if len(versions) <= 16:  # a few functions (relearning): by the primary key
                rows = [
                    (function, version, prompt)
                    for function, version in versions.items()
                    for (prompt,) in self._db.execute(
                        "SELECT prompt FROM learned WHERE function = ? AND version = ? ORDER BY at DESC",
                        (function, version),
                    ).fetchall()
                ]
            else:
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
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if prompt is None:
                    cursor = self._db.execute("DELETE FROM learned WHERE function = ?", (function,))
                else:
                    cursor = self._db.execute(
                        "DELETE FROM learned WHERE function = ? AND prompt = ?", (function, prompt)
                    )
                seq = self._log(function) if cursor.rowcount > 0 else 0
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            if seq:
                self._wrote(seq)
        return cursor.rowcount

    def changed(self) -> list[str] | None:
        with self._lock:
            try:
                data_version = self._db.execute("PRAGMA data_version").fetchone()[0]
                if data_version == self._data_version:
                    return []
                # Asked before reading the log: a commit in between is read now or next time.
                rows = self._db.execute(
                    "SELECT seq, function FROM learned_changes WHERE seq > ? ORDER BY seq", (self._seen,)
                ).fetchall()
            except sqlite3.Error as exc:  # routing goes on with the examples it has; next route retries
                log.warning("router: learned examples' change log not read: %s", exc)
                return []
            self._data_version = data_version
            if not rows:
                return []
            behind = rows[0][0] > self._seen + 1  # the log was cut past what this router read
            self._seen = rows[-1][0]
        return None if behind else list(dict.fromkeys(function for _, function in rows))

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(frozen=True, slots=True)
class Routed:
    """What a routing was asked, and the function it matched (None: none cleared the threshold)."""

    prompt: str
    match: str | None = None


class Routings(Protocol):
    """What recent routings were asked and matched, by routing id. Called from the router's
    worker threads."""

    def remember(self, routing_id: str, prompt: str, match: str | None = None) -> None:
        """Keep `prompt` and `match` under `routing_id`; must not make the routing wait (nor fail it)."""
        ...

    def recall(self, routing_id: str) -> Routed | None:
        """A remembered routing (None: unknown, or forgotten)."""
        ...


class RecentRoutings:
    """`Routings` in this process: the last `REMEMBERED_ROUTINGS`."""

    def __init__(self, size: int = REMEMBERED_ROUTINGS) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._routings: OrderedDict[str, Routed] = OrderedDict()

    def remember(self, routing_id: str, prompt: str, match: str | None = None) -> None:
        with self._lock:
            self._routings[routing_id] = Routed(prompt, match)
            if len(self._routings) > self._size:
                self._routings.popitem(last=False)

    def recall(self, routing_id: str) -> Routed | None:
        with self._lock:
            return self._routings.get(routing_id)
