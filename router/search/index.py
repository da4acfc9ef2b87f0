"""The hybrid function index: dense embeddings and BM25, fused into one score.

The index follows its catalog incrementally: `sync` compares the documents it
is given with what it holds (by key and text hash) and embeds only the new and
changed ones, taking vectors from the on-disk `EmbeddingCache` when it has them.

Fusion (tuned on the BFCL pool, see bench/RESULTS.md)::

    dense = (1 - DESCRIPTION_WEIGHT) * cosine(query, full text)
            + DESCRIPTION_WEIGHT * cosine(query, description)
    score = dense + LEXICAL_WEIGHT * bm25(query, function)

A function with example prompts (its author's, or learned from use) has two more views
(views.py): the best cosine between the query and one of its examples, and the cosine
with their centroid, both in the space whitened by the examples' within-function
scatter (whitening.py). Equal thirds of each make its dense score,
``dense = (dense + best example + centroid) / 3``, and the examples' words join the
function's BM25 terms; a function without examples keeps its dense score (its BM25 score
moves only as the corpus statistics do). Max alone,
centroid alone, other weights, and BM25 without the examples were measured on APIBench
TorchHub (bench/router_examples.py, bench/RESULTS.md): the blend was best, and whitening
was chosen over the raw embeddings by cross-validation on its training prompts.

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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from toolmesh.router.embedding.cache import EmbeddingCache
from toolmesh.router.embedding.embedder import Embedder, Vectors, normalise
from toolmesh.router.search.bm25 import BM25
from toolmesh.router.search.text import Document, terms, text_hash
from toolmesh.router.search.views import ExampleViews
from toolmesh.router.search.whitening import SHRINKAGE, Fitted, Snapshot

LEXICAL_WEIGHT = 0.02
#: Shares of the cosine from the best example and from the examples' centroid (for
#: functions that have examples; the rest is the description score).
BEST_EXAMPLE_WEIGHT = 1 / 3
CENTROID_WEIGHT = 1 / 3
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
    best_weight: float = BEST_EXAMPLE_WEIGHT
    centroid_weight: float = CENTROID_WEIGHT
    #: Whether examples' words count in the function's BM25 document.
    example_terms: bool = True
    #: Shrinkage of the example views' whitening (whitening.py); None: raw embeddings.
    whitening: float | None = SHRINKAGE

    def blend(
        self, dense: NDArray[np.float32], best: NDArray[np.float32], centroid: NDArray[np.float32]
    ) -> NDArray[np.float32]:
        """The dense score with the example views mixed in (NaN where a function has none)."""
        has = ~np.isnan(best)
        if not has.any():
            return dense
        own = 1 - self.best_weight - self.centroid_weight
        mixed = own * dense + self.best_weight * best + self.centroid_weight * centroid
        blended: NDArray[np.float32] = np.where(has, mixed, dense).astype(np.float32)
        return blended

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
        self._views = ExampleViews(embedder.dimension, fusion.whitening)
        #: Per slot: its author's example vectors, and the ones learned from use (by text).
        self._author: dict[int, Vectors] = {}
        self._learned: dict[int, dict[str, Vectors]] = {}
        #: Per namespace, how many of its functions carry a side-effect annotation.
        self._annotations: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def document(self, key: str) -> Document:
        return self._docs[self._slots[key]]

    def annotated(self, namespace: str) -> bool:
        """Whether any function of `namespace` is annotated read-only or destructive: then
        the others' silence means they change data (router/safety/effects.py)."""
        return self._annotations[namespace] > 0

    def _put(self, slot: int, doc: Document) -> None:
        old = self._docs.get(slot)
        if old is not None:
            self._annotations[old.namespace] -= old.read_only or old.destructive
        self._docs[slot] = doc
        self._annotations[doc.namespace] += doc.read_only or doc.destructive

    # -- keeping up with the catalog ---------------------------------------------------------

    def _embed(self, wanted: list[str]) -> tuple[dict[str, Vectors], int]:
        """Vectors of `wanted` by text hash, from the cache when it has them; and how many
        had to be embedded."""
        texts = {text_hash(t): t for t in wanted}
        model = self.embedder.model_id
        known = self.cache.get(model, texts) if self.cache is not None else {}
        missing = [h for h in texts if h not in known]
        fresh: dict[str, Vectors] = {}
        if missing:
            embedded = self.embedder.embed([texts[h] for h in missing])
            fresh = dict(zip(missing, embedded, strict=True))
            if self.cache is not None:
                self.cache.put(model, fresh)
        return {**known, **fresh}, len(fresh)

    def _vectors_for(self, docs: list[Document]) -> tuple[Vectors, list[Vectors], int]:
        """Each document's two views, embedded (or read from the cache) and blended into one
        row: a dot product with the blend is the blend of the two cosines. Then each
        document's example vectors, and how many texts were embedded."""
        texts = [t for doc in docs for t in (doc.dense_text(), doc.description_text(), *doc.examples)]
        found, fresh = self._embed(texts)
        examples = [self._stack([found[text_hash(t)] for t in doc.examples]) for doc in docs]
        rows = [
            (1 - DESCRIPTION_WEIGHT) * found[text_hash(doc.dense_text())]
            + DESCRIPTION_WEIGHT * found[text_hash(doc.description_text())]
            for doc in docs
        ]
        return np.stack(rows).astype(np.float32) if docs else self._vectors[:0], examples, fresh

    def _stack(self, vectors: list[Vectors]) -> Vectors:
        return np.array(vectors, np.float32).reshape(-1, self.embedder.dimension)

    def _refresh_views(self, slot: int) -> None:
        learned = list(self._learned.get(slot, {}).values())
        author = self._author.get(slot)
        parts = ([author] if author is not None else []) + ([self._stack(learned)] if learned else [])
        self._views.set(slot, np.concatenate(parts) if parts else self._stack([]))

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

    def _terms_of(self, doc: Document, slot: int | None = None) -> list[str]:
        found = doc.lexical_terms()
        if self.fusion.example_terms:
            learned = self._learned.get(slot, {}) if slot is not None else {}
            for example in (*doc.examples, *learned):
                found += terms(example)
        return found

    def upsert(self, docs: Iterable[Document]) -> SyncReport:
        """Add documents, or replace those whose key is already indexed (if their text changed)."""
        docs = list(docs)
        changed = [
            d for d in docs if d.key not in self._slots or self._hashes[self._slots[d.key]] != d.text_hash()
        ]
        changed_keys = {d.key for d in changed}
        for doc in docs:
            # Same text, perhaps other annotations (read_only, destructive): nothing to embed.
            if doc.key in self._slots and doc.key not in changed_keys:
                self._put(self._slots[doc.key], doc)
        vectors, examples, embedded = self._vectors_for(changed)
        added = 0
        for doc, vector, own in zip(changed, vectors, examples, strict=True):
            slot = self._slots.get(doc.key)
            if slot is None:
                slot = self._slot()
                added += 1
            elif self._docs[slot].dense_text() != doc.dense_text():
                # What the function says it does changed: what was learned about the old one
                # may no longer be true of it.
                self._learned.pop(slot, None)
            self._slots[doc.key] = slot
            self._put(slot, doc)
            self._hashes[slot] = doc.text_hash()
            self._vectors[slot] = vector
            self._used[slot] = True
            self._author[slot] = own
            self._refresh_views(slot)
            self._bm25.add(slot, self._terms_of(doc, slot))
        return SyncReport(added, len(changed) - added, 0, embedded)

    def remove(self, keys: Iterable[str]) -> int:
        removed = 0
        for key in keys:
            slot = self._slots.pop(key, None)
            if slot is None:
                continue
            gone = self._docs.pop(slot)
            self._annotations[gone.namespace] -= gone.read_only or gone.destructive
            del self._hashes[slot]
            self._author.pop(slot, None)
            self._learned.pop(slot, None)
            self._views.drop(slot)
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

    # -- learned examples ----------------------------------------------------------------

    def learned(self, key: str) -> list[str]:
        """The prompts learned for `key` (none when it is not indexed)."""
        slot = self._slots.get(key)
        return list(self._learned.get(slot, {})) if slot is not None else []

    def set_learned(self, key: str, prompts: Iterable[str]) -> bool:
        """Make `prompts` the learned examples of `key` (embedded now, from the cache when it
        has them); False when `key` is not indexed."""
        slot = self._slots.get(key)
        if slot is None:
            return False
        wanted = list(dict.fromkeys(prompts))
        found, _ = self._embed(wanted)
        self._learned[slot] = {p: found[text_hash(p)] for p in wanted}
        if not wanted:
            del self._learned[slot]
        self._refresh_views(slot)
        self._bm25.add(slot, self._terms_of(self._docs[slot], slot))
        return True

    def fit_snapshot(self) -> Snapshot | None:
        """The example rows to fit the views' whitening on elsewhere, when a fit is due and
        none is out (views.py); its result must come back through `install_fit`."""
        return self._views.snapshot()

    def install_fit(self, fitted: Fitted | None) -> None:
        self._views.install(fitted)

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
        dense = self.fusion.blend(dense, *self._views.scores(query_vector, size, dense))
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
