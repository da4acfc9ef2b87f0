"""Example prompts as extra views of a function: the best-matching example speaks for it.

A function may carry example prompts (written by its author, or learned from use). Each
is embedded once, when it arrives; a query then scores every example, and each function
gets two numbers from its own: the best example's cosine (max over views) and the cosine
with the centroid of its examples (what they share). Both are taken in the space
whitened by the examples' within-function scatter (whitening.py), where the words all
prompts for a task share count less than what sets one function apart. The index blends
both with the description score; bench/router_examples.py measures the choices.

The rows live in one matrix, one segment per function (segments.py), so a query costs
one small matrix-vector product for the whitening, one over the examples and one
segmented max. A prompt learned from use rewrites one function's segment (or moves it to
the end), so the next route pays for whitening that function's rows, not the catalog's.
Fitting the whitening is the costly part of a full rebuild (~0.5-1 s for 20,000 rows), so
it is fitted again only when the rows have changed by more than `REFIT_CHANGE` since the
last fit.

On a large catalog that product is most of a route's work (2,000 functions with ten
examples each: 20,000 rows), so past `EXACT_ROWS` rows only a shortlist is scored
exactly: the `SHORTLIST` functions best on the description and centroid views. The
others take their centroid's cosine as their best example's; they were far from the
top k already (bench/router_examples.py --latency measures the cost).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from toolmesh.router.embedding.embedder import Vectors, normalise
from toolmesh.router.segments import SegmentMatrix
from toolmesh.router.whitening import SHRINKAGE, within_whitening

#: Up to this many example rows, every one is scored for every query.
EXACT_ROWS = 4096
#: Past it, the functions whose best example is scored exactly.
SHORTLIST = 128
#: Share of example rows added or removed (since the whitening was fitted) that fits it again.
REFIT_CHANGE = 0.1


class ExampleViews:
    """Per index slot, the unit vectors of its examples; `scores` scores them all for a query.
    `shrinkage` is the whitening's (whitening.py); None compares the raw embeddings."""

    def __init__(self, dimension: int, shrinkage: float | None = SHRINKAGE) -> None:
        self.dimension = dimension
        self.shrinkage = shrinkage
        self._whitening: Vectors | None = None
        #: Rows the whitening was fitted on, and rows changed since (None: fit at the next build).
        self._fitted_on = 0
        self._changed: int | None = None
        #: Per slot: its example rows as given; and as compared (whitened, unit length), with
        #: their centroid, once computed.
        self._rows: dict[int, Vectors] = {}
        self._prepared: dict[int, tuple[Vectors, Vectors]] = {}
        #: Slots whose rows changed since the segments were last brought up to date.
        self._dirty: set[int] = set()
        self._segments = SegmentMatrix(dimension)

    def __len__(self) -> int:
        """How many example vectors are held, over all functions."""
        return sum(len(rows) for rows in self._rows.values())

    def set(self, slot: int, vectors: Vectors) -> None:
        """Replace a slot's examples (an empty array drops them)."""
        old = self._rows.pop(slot, None)
        if len(vectors):
            self._rows[slot] = vectors.astype(np.float32)
        self._note_change(slot, old, self._rows.get(slot))

    def drop(self, slot: int) -> None:
        self._note_change(slot, self._rows.pop(slot, None), None)

    def _note_change(self, slot: int, old: Vectors | None, new: Vectors | None) -> None:
        before = {row.tobytes() for row in old} if old is not None else set()
        after = {row.tobytes() for row in new} if new is not None else set()
        if before != after:
            self._dirty.add(slot)
            self._prepared.pop(slot, None)
            if self._changed is not None:
                self._changed += len(before ^ after)

    def has(self, slot: int) -> bool:
        return slot in self._rows

    def _update(self) -> None:
        """Bring the segments up to date with the rows: after enough change, fit the
        whitening again and lay every segment out anew; otherwise write only the changed
        slots (compacting when moved segments have left too many dead ones behind)."""
        changed = self._changed
        refit = changed is None or changed > REFIT_CHANGE * self._fitted_on
        if refit:
            self._fit()
        else:
            live = sorted(s for s in self._dirty if s in self._rows)
            self._prepare(live)
            for slot in self._dirty:
                if slot in self._rows:
                    self._segments.put(slot, *self._prepared[slot])
                else:
                    self._segments.remove(slot)
        if refit or self._segments.wasted:
            self._prepare([s for s in self._rows if s not in self._prepared])
            self._segments.compact(self._prepared)
        self._dirty.clear()

    def _fit(self) -> None:
        slots = sorted(self._rows)
        self._whitening = None
        if slots and self.shrinkage is not None:
            matrix = np.concatenate([self._rows[s] for s in slots])
            counts = np.array([len(self._rows[s]) for s in slots], np.int64)
            self._whitening = within_whitening(matrix, counts, self.shrinkage)
        self._fitted_on = sum(len(rows) for rows in self._rows.values())
        self._changed = 0 if slots else None
        self._prepared.clear()

    def _whiten(self, vectors: NDArray[np.float32]) -> Vectors:
        if self._whitening is not None:
            vectors = vectors @ self._whitening
        return normalise(vectors)

    def _prepare(self, slots: list[int]) -> None:
        """Whiten the rows and the centroid of each of `slots` (in one product each)."""
        if not slots:
            return
        counts = [len(self._rows[s]) for s in slots]
        rows = self._whiten(np.concatenate([self._rows[s] for s in slots]))
        centroids = self._whiten(np.stack([self._rows[s].mean(axis=0) for s in slots]))
        for slot, own, centroid in zip(slots, np.split(rows, np.cumsum(counts)[:-1]), centroids, strict=True):
            self._prepared[slot] = (own, centroid)

    def scores(
        self, query_vector: Vectors, size: int, dense: NDArray[np.float32] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Per slot below `size`: the highest cosine between the query and one of its
        examples, and the cosine with their centroid; NaN where a slot has none. `dense`
        (the description scores, per slot) picks the shortlist on a large catalog."""
        if self._dirty:
            self._update()
        best = np.full(size, np.nan, np.float32)
        centroid = np.full(size, np.nan, np.float32)
        segments = self._segments
        if not len(segments):
            return best, centroid
        owners, starts, matrix = segments.owners, segments.starts, segments.matrix
        # Dead segments (owner -1) are scored like the others and then left out.
        keep = (owners >= 0) & (owners < size)
        if self._whitening is not None:
            # einsum, not BLAS: see FunctionIndex.score_all.
            query_vector = normalise(np.einsum("ij,j->i", self._whitening, query_vector)[None])[0]
        near = np.einsum("ij,j->i", segments.centroids, query_vector)
        if len(matrix) <= EXACT_ROWS or dense is None or len(segments) <= SHORTLIST:
            cosines = np.einsum("ij,j->i", matrix, query_vector)
            found = np.maximum.reduceat(cosines, starts)
        else:
            prior = near + dense[np.clip(owners, 0, size - 1)]
            prior[~keep] = -np.inf
            chosen = np.argpartition(-prior, SHORTLIST - 1)[:SHORTLIST]
            counts = segments.lengths[chosen]
            offsets = np.cumsum(counts) - counts
            rows = np.arange(counts.sum()) - np.repeat(offsets, counts) + np.repeat(starts[chosen], counts)
            cosines = np.einsum("ij,j->i", matrix[rows], query_vector)
            found = near.copy()
            found[chosen] = np.maximum.reduceat(cosines, offsets)
        best[owners[keep]] = found[keep]
        centroid[owners[keep]] = near[keep]
        return best, centroid
