"""The transport-free router: a prompt in, the function that fits (or none) and the candidates out."""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from toolmesh.router import safety
from toolmesh.router.learning import (
    ExampleStore,
    RecentRoutings,
    Routed,
    Routings,
    learnable,
    near_duplicates,
)
from toolmesh.router.search.index import Candidate, FunctionIndex, SyncReport
from toolmesh.router.search.text import Document, text_hash
from toolmesh.router.search.whitening import Fitted, Snapshot
from toolmesh.router.sessions import Sessions, Turn

log = logging.getLogger("toolmesh.router")

#: Score added to functions this session used recently (most recent first), so they win near-ties.
RECENCY_BONUS = (0.03, 0.02, 0.01)
#: Turns of history the router reads for that preference.
RECENT_TURNS = 5
MAX_PROMPT_CHARS = 8192
# "now do the same for Paris", "and for Oslo?", "what about tomorrow", "again with 5 days".
_FOLLOW_UP = re.compile(
    r"^\s*(?:and|now|then|also|ok(?:ay)?|same|again|what about|how about)\b"
    r"|\b(?:the same|same thing|same for|do that|do it|again|instead|as well|too)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class RouteResult:
    """`match` is the best candidate's key whose score clears the threshold and that the
    safety rules (safety.py) let through, else None; `declined` says who was passed over and
    why. Each candidate carries its fused score and the dense and lexical scores it was fused from."""

    match: str | None
    candidates: list[Candidate]
    #: Names this routing in `POST /v1/route/feedback`.
    routing_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    declined: list[safety.Declined] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "routing_id": self.routing_id,
            "match": self.match,
            "candidates": [
                {
                    "name": c.key,
                    "score": round(c.score, 4),
                    "scores": {"dense": round(c.dense, 4), "lexical": round(c.lexical, 4)},
                }
                for c in self.candidates
            ],
            "declined": [d.to_dict() for d in self.declined],
        }


class Router:
    """Ranks an index's functions for prompts; thread-safe (the index is swapped under a lock)."""

    #: Off, the match is the best candidate over the threshold whatever it does (for
    #: bench/free_text_safety.py, which measures routing with and without the rules).
    safe_matches = True

    def __init__(
        self,
        index: FunctionIndex,
        threshold: float,
        sessions: Sessions | None = None,
        learned: ExampleStore | None = None,
        routings: Routings | None = None,
    ) -> None:
        self.index = index
        self.threshold = threshold
        self.sessions = sessions
        self.learned = learned
        self.routings = routings or RecentRoutings()
        self._lock = threading.Lock()
        #: The thread fitting the example views' whitening, if one was started.
        self.fitter: threading.Thread | None = None

    def sync(self, docs: Iterable[Document]) -> SyncReport:
        """Follow the catalog: index what is new or changed, drop what is gone, and give each
        function the examples learned for its current version."""
        docs = list(docs)
        with self._lock:
            report = self.index.sync(docs)
        if self.learned is not None:
            self._install_learned({doc.key: version(doc) for doc in docs})
        # Following the catalog is not on any request's path: fit here, and routes keep the
        # map they have until this one is ready.
        with self._lock:
            snapshot = self.index.fit_snapshot()
        if snapshot is not None:
            self._fit(snapshot)
        return report

    # -- learning from use -------------------------------------------------------------------

    def learn(self, key: str, prompt: str, principal: str) -> list[str] | None:
        """Add `prompt` as a learned example of `key` (None: no store, or no such function)."""
        if self.learned is None or key not in self.index:
            return None
        prompts = self.learned.add(key, version(self.document(key)), prompt, principal)
        with self._lock:
            self.index.set_learned(key, prompts)
        self._fit_when_due()
        return prompts

    def forget(self, key: str, prompt: str | None = None) -> int:
        """Remove one learned prompt of `key`, or all of them, from the store and the index."""
        if self.learned is None:
            return 0
        removed = self.learned.remove(key, prompt)
        self.relearn(key)
        return removed

    def relearn(self, key: str) -> None:
        """Read `key`'s learned examples from the store again (another replica, or `toolmesh
        router examples remove`, changed them)."""
        if self.learned is None or key not in self.index:
            return
        prompts = self.learned.current({key: version(self.document(key))}).get(key, [])
        with self._lock:
            if key in self.index and self.index.learned(key) != prompts:
                self.index.set_learned(key, prompts)
        self._fit_when_due()

    def follow_store(self) -> None:
        """Read again the examples someone else changed in the store (another gateway process
        on the same SQLite file, `toolmesh router examples`): called before each route, and a
        µs check when nothing changed. (Redis' changes arrive on the state feed instead.)"""
        if self.learned is None:
            return
        changed = self.learned.changed()
        if changed is None:  # too many to name: read every function's again
            with self._lock:
                keys = [key for key in self.index.slot_keys() if key is not None]
                versions = {key: version(self.index.document(key)) for key in keys}
            self._install_learned(versions)
            self._fit_when_due()
            return
        for key in changed:
            self.relearn(key)

    def _install_learned(self, versions: dict[str, str]) -> None:
        """Give each function of `versions` the examples the store holds for that version (none:
        what it had is dropped)."""
        assert self.learned is not None
        current = self.learned.current(versions)
        with self._lock:
            for key in versions:
                prompts = current.get(key, [])
                if key in self.index and self.index.learned(key) != prompts:
                    self.index.set_learned(key, prompts)

    def unlearn(self, key: str, prompt: str) -> list[str]:
        """Remove from `key`'s learned examples `prompt` and those asking the same (learning.py's
        `near_duplicates`): what a routing that wrongly matched `key` taught it. The removed
        prompts; removal goes through the store, so every router sharing it follows."""
        if self.learned is None:
            return []
        if key not in self.index:  # gone from the catalog: its examples route nothing now
            return [learnable(prompt)] if self.learned.remove(key, learnable(prompt)) else []
        stored = self.learned.current({key: version(self.document(key))}).get(key, [])
        removed = [
            p for p in near_duplicates(prompt, stored, self.index.embedder) if self.learned.remove(key, p)
        ]
        if removed:
            self.relearn(key)
        return removed

    def _fit_when_due(self) -> None:
        """Fit the example views' whitening again once enough examples changed, in a thread
        of its own: neither the routes nor the call that learned wait for it (a fit is
        ~0.2-1 s at 20,000 example rows, and tens of milliseconds at any size)."""
        with self._lock:
            snapshot = self.index.fit_snapshot()
        if snapshot is not None:
            self.fitter = threading.Thread(target=self._fit, args=(snapshot,), name="router-fit", daemon=True)
            self.fitter.start()

    def _fit(self, snapshot: Snapshot) -> None:
        fitted: Fitted | None = None
        try:
            fitted = snapshot.fit()
        except Exception:  # routing goes on with the map it has; the next change tries again
            log.exception("router: fitting the example views' whitening failed")
        finally:
            with self._lock:
                self.index.install_fit(fitted)

    def routed(self, routing_id: str) -> Routed | None:
        """A recent routing's prompt and match (None: unknown or forgotten)."""
        return self.routings.recall(routing_id)

    def document(self, key: str) -> Document:
        with self._lock:
            return self.index.document(key)

    def recent_functions(self, history: Sequence[Turn]) -> dict[str, float]:
        bonuses: dict[str, float] = {}
        recent = [t.function for t in reversed(history[-RECENT_TURNS:]) if t.function]
        for function, bonus in zip(dict.fromkeys(recent), RECENCY_BONUS, strict=False):
            bonuses[function] = bonus
        return bonuses

    def history(self, session_id: str | None) -> list[Turn]:
        if not session_id or self.sessions is None:
            return []
        return self.sessions.history(session_id, RECENT_TURNS)

    def route(
        self,
        prompt: str,
        k: int = 5,
        *,
        session_id: str | None = None,
        allowed: Callable[[str], bool] | None = None,
    ) -> RouteResult:
        """The `k` best functions for `prompt`; `allowed` hides functions the caller may not use."""
        self.follow_store()
        history = self.history(session_id)
        boosts = self.recent_functions(history)
        prompt = prompt[:MAX_PROMPT_CHARS]
        # A follow-up ("and in Paris?", "now 6 days") says little alone: it is routed together
        # with the session's previous prompt, which names the task (bench/router_examples.py
        # --sessions measures it).
        text, context = prompt, None
        if history and is_follow_up(prompt):
            context = history[-1].prompt
            text = f"{context} {prompt}"[:MAX_PROMPT_CHARS]
        # Embedding is the slow part and reads no index state: keep it outside the lock.
        vector = self.index.embedder.embed([text])[0]
        with self._lock:
            candidates = self.index.search(text, k, allowed=allowed, boosts=boosts, query_vector=vector)
            found = safety.profiles(self.index, candidates) if self.safe_matches else {}
        # The rules read what the user said now (a question stays one after a command turn),
        # with the turn before when it says too little alone.
        match, declined = safety.choose(prompt, candidates, found, self.threshold, context)
        result = RouteResult(match, candidates, declined=declined)
        self.routings.remember(result.routing_id, prompt, result.match)
        return result


def is_follow_up(prompt: str) -> bool:
    """Whether a prompt reads as continuing the previous turn ("and for Oslo?")."""
    return bool(_FOLLOW_UP.search(prompt))


def version(doc: Document) -> str:
    """What learned examples are kept against: changes when anything the router reads about
    the function (besides its examples) does."""
    return text_hash(doc.dense_text())
