"""The hybrid function index: dense embeddings and BM25, fused into one score.

The index follows its catalog incrementally: `sync` compares the documents it
is given with what it holds (by key and text hash) and embeds only the new and
changed ones, taking vectors from the on-disk `EmbeddingCache` when it has them.

Fusion (tuned on the BFCL pool, see bench/RESULTS.md)::

    dense = (1 - DESCRIPTION_WEIGHT) * cosine(query, full text)
            + DESCRIPTION_WEIGHT * cosine(query, description)
    score = dense + LEXICAL_WEIGHT * bm25(query, function)

The full text (name, description, parameters) carries the most, but long parameter
lists dilute it, so the description alone is a second view (blended into one stored
vector, so it costs nothing per query). A weighted sum of the raw scores beat
reciprocal-rank fusion, per-query z-score or max normalisation, and a saturating
lexical term on that set; it also keeps
the score on one absolute scale (a cosine plus a bonus for shared rare words),
which is what lets one calibrated "no function fits" threshold serve every
prompt and catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from toolmesh.router.bm25 import BM25
from toolmesh.router.embedding.cache import EmbeddingCache
from toolmesh.router.embedding.embedder import Embedder, Vectors, normalise
from toolmesh.router.text import Document, terms, text_hash

LEXICAL_WEIGHT = 0.02
#: Share of the cosine that comes from the description alone (the rest: the whole function text).
DESCRIPTION_WEIGHT = 0.35


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked function: the fused score and the two signals behind it."""

    key: str
    score: float
    dense: float
    lexical: float


@dataclass(frozen=True, slots=True)
class SyncReport:
    added: int
    updated: int
    removed: int
    embedded: int


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the two scores combine; the defaults are the tuned ones."""

    lexical_weight: float = LEXICAL_WEIGHT

    def fuse(self, dense: NDArray[np.float32], lexical: NDArray[np.float32]) -> NDArray[np.float32]:
        fused: NDArray[np.float32] = (dense + self.lexical_weight * lexical).astype(np.float32)
        return fused


class FunctionIndex:
    def __init__(
        self, embedder: Embedder, cache: EmbeddingCache | None = None, fusion: Fusion = Fusion()
    ) -> None:
        self.embedder = embedder
        self.cache = cache
        self.fusion = fusion
        self._bm25 = BM25()
        self._vectors = np.zeros((0, embedder.dimension), np.float32)
        self._used = np.zeros(0, bool)
        self._slots: dict[str, int] = {}
        self._docs: dict[int, Document] = {}
        self._hashes: dict[int, str] = {}
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def document(self, key: str) -> Document:
        return self._docs[self._slots[key]]

    # -- keeping up with the catalog ---------------------------------------------------------

    def _vectors_for(self, docs: list[Document]) -> tuple[Vectors, int]:
        """Each document's two views, embedded (or read from the cache) and blended into one
        row: a dot product with the blend is the blend of the two cosines."""
        texts = {text_hash(t): t for doc in docs for t in (doc.dense_text(), doc.description_text())}
        model = self.embedder.model_id
        known = self.cache.get(model, texts) if self.cache is not None else {}
        missing = [h for h in texts if h not in known]
        fresh: dict[str, Vectors] = {}
        if missing:
            embedded = self.embedder.embed([texts[h] for h in missing])
            fresh = dict(zip(missing, embedded, strict=True))
            if self.cache is not None:
                self.cache.put(model, fresh)
        found = {**known, **fresh}
        rows = [
            (1 - DESCRIPTION_WEIGHT) * found[text_hash(doc.dense_text())]
            + DESCRIPTION_WEIGHT * found[text_hash(doc.description_text())]
            for doc in docs
        ]
        return np.stack(rows).astype(np.float32) if docs else self._vectors[:0], len(fresh)

    def _slot(self) -> int:
        if self._free:
            return self._free.pop()
        slot = len(self._used)
        if slot >= len(self._vectors):
            capacity = max(64, 2 * len(self._vectors))
            grown = np.zeros((capacity, self.embedder.dimension), np.float32)
            grown[: len(self._vectors)] = self._vectors
            self._vectors = grown
        self._used = np.append(self._used, False)
        return slot

    def upsert(self, docs: Iterable[Document]) -> SyncReport:
        """Add documents, or replace those whose key is already indexed (if their text changed)."""
        changed = [
            d for d in docs if d.key not in self._slots or self._hashes[self._slots[d.key]] != d.text_hash()
        ]
        vectors, embedded = self._vectors_for(changed)
        added = 0
        for doc, vector in zip(changed, vectors, strict=True):
            slot = self._slots.get(doc.key)
            if slot is None:
                slot = self._slot()
                added += 1
            self._slots[doc.key] = slot
            self._docs[slot] = doc
            self._hashes[slot] = doc.text_hash()
            self._vectors[slot] = vector
            self._used[slot] = True
            self._bm25.add(slot, doc.lexical_terms())
        return SyncReport(added, len(changed) - added, 0, embedded)

    def remove(self, keys: Iterable[str]) -> int:
        removed = 0
        for key in keys:
            slot = self._slots.pop(key, None)
            if slot is None:
                continue
            del self._docs[slot], self._hashes[slot]
            self._used[slot] = False
            self._bm25.remove(slot)
            self._free.append(slot)
            removed += 1
        return removed

    def sync(self, docs: Iterable[Document]) -> SyncReport:
        """Make the index hold exactly `docs`, touching only what changed."""
        wanted = {doc.key: doc for doc in docs}
        removed = self.remove([key for key in self._slots if key not in wanted])
        report = self.upsert(wanted.values())
        return SyncReport(report.added, report.updated, removed, report.embedded)

    def slot_keys(self) -> list[str | None]:
        """The key in each slot of `score_all`'s arrays (None for a free slot)."""
        keys: list[str | None] = [None] * len(self._used)
        for key, slot in self._slots.items():
            keys[slot] = key
        return keys

    def similar(self, key: str, min_cosine: float) -> set[str]:
        """Functions whose embedding is at least this close to `key`'s (itself included)."""
        size = len(self._used)
        unit = normalise(self._vectors[:size])
        cosines = unit @ unit[self._slots[key]]
        return {k for k, slot in self._slots.items() if cosines[slot] >= min_cosine}

    # -- ranking -----------------------------------------------------------------------------

    def score_all(self, query: str, query_vector: Vectors | None = None) -> tuple[NDArray[np.float32], ...]:
        """(fused, dense, lexical) for every slot; unused slots hold -inf in `fused`."""
        size = len(self._used)
        if query_vector is None:
            query_vector = self.embedder.embed([query])[0]
        # einsum, not BLAS: one matrix-vector product is too small for OpenBLAS's threads,
        # which cost more than they save next to onnxruntime's (3-4x slower here).
        dense = np.einsum("ij,j->i", self._vectors[:size], query_vector)
        lexical = self._bm25.scores(terms(query), size)
        fused = self.fusion.fuse(dense, lexical)
        fused[~self._used] = -np.inf
        return fused, dense, lexical

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        allowed: Callable[[str], bool] | None = None,
        boosts: Mapping[str, float] | None = None,
        query_vector: Vectors | None = None,
    ) -> list[Candidate]:
        """The `k` best functions for `query`, best first. `allowed` filters keys; `boosts` adds to scores."""
        if not self._slots or k <= 0:
            return []
        fused, dense, lexical = self.score_all(query, query_vector)
        for key, bonus in (boosts or {}).items():
            slot = self._slots.get(key)
            if slot is not None:
                fused[slot] += bonus
        if allowed is not None:
            for key, slot in self._slots.items():
                if not allowed(key):
                    fused[slot] = -np.inf
        count = min(k, len(fused))
        top = np.argpartition(-fused, count - 1)[:count]
        top = top[np.argsort(-fused[top], kind="stable")]
        return [
            Candidate(self._docs[int(s)].key, float(fused[s]), float(dense[s]), float(lexical[s]))
            for s in top
            if np.isfinite(fused[s])
        ]
