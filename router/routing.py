"""The transport-free router: a prompt in, the function that fits (or none) and the candidates out."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from toolmesh.router.index import Candidate, FunctionIndex, SyncReport
from toolmesh.router.sessions import Sessions, Turn
from toolmesh.router.text import Document

#: Score added to functions this session used recently (most recent first), so they win near-ties.
RECENCY_BONUS = (0.03, 0.02, 0.01)
#: Turns of history the router reads for that preference.
RECENT_TURNS = 5
MAX_PROMPT_CHARS = 8192


@dataclass(frozen=True, slots=True)
class RouteResult:
    """`match` is the best candidate's key when its score clears the threshold, else None.
    Each candidate carries its fused score and the dense and lexical scores it was fused from."""

    match: str | None
    candidates: list[Candidate]

    def to_dict(self) -> dict[str, object]:
        return {
            "match": self.match,
            "candidates": [
                {
                    "name": c.key,
                    "score": round(c.score, 4),
                    "scores": {"dense": round(c.dense, 4), "lexical": round(c.lexical, 4)},
                }
                for c in self.candidates
            ],
        }


class Router:
    """Ranks an index's functions for prompts; thread-safe (the index is swapped under a lock)."""

    def __init__(self, index: FunctionIndex, threshold: float, sessions: Sessions | None = None) -> None:
        self.index = index
        self.threshold = threshold
        self.sessions = sessions
        self._lock = threading.Lock()

    def sync(self, docs: Iterable[Document]) -> SyncReport:
        """Follow the catalog: index what is new or changed, drop what is gone."""
        with self._lock:
            return self.index.sync(docs)

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
        boosts = self.recent_functions(self.history(session_id))
        prompt = prompt[:MAX_PROMPT_CHARS]
        # Embedding is the slow part and reads no index state: keep it outside the lock.
        vector = self.index.embedder.embed([prompt])[0]
        with self._lock:
            candidates = self.index.search(prompt, k, allowed=allowed, boosts=boosts, query_vector=vector)
        match = candidates[0].key if candidates and candidates[0].score >= self.threshold else None
        return RouteResult(match, candidates)
