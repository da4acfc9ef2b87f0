"""Example prompts as extra views of a function: the best-matching example speaks for it.

A function may carry example prompts (written by its author, or learned from use). Each
is embedded once, when it arrives; a query then scores every example, and each function
gets two numbers from its own: the best example's cosine (max over views) and the cosine
with the centroid of its examples (what they share). Both are taken in the space
whitened by the examples' within-function scatter (whitening.py), where the words all
prompts for a task share count less than what sets one function apart. The index blends
both with the description score; bench/router_examples.py measures the choices. The rows
live in one matrix grouped by function, rebuilt lazily after a change (whitening
included), so a query costs one small matrix-vector product for the whitening, one over
the examples and one segmented max. Fitting the whitening is the costly part of a rebuild
(~0.5-1 s for 20,000 rows), so it is fitted again only when the rows have changed by more
than `REFIT_CHANGE` since the last fit: a prompt learned from use reuses the map.

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
        self._rows: dict[int, Vectors] = {}
        self._matrix = np.zeros((0, dimension), np.float32)
        self._owners = np.zeros(0, np.int64)
        self._starts = np.zeros(0, np.int64)
        self._centroids = np.zeros((0, dimension), np.float32)
        self._counts = np.zeros(0, np.int64)
        self._stale = False

    def __len__(self) -> int:
        """How many example vectors are held, over all functions."""
        return sum(len(rows) for rows in self._rows.values())

    def set(self, slot: int, vectors: Vectors) -> None:
        """Replace a slot's examples (an empty array drops them)."""
        old = self._rows.pop(slot, None)
        if len(vectors):
            self._rows[slot] = vectors.astype(np.float32)
        self._note_change(old, self._rows.get(slot))

    def drop(self, slot: int) -> None:
        self._note_change(self._rows.pop(slot, None), None)

    def _note_change(self, old: Vectors | None, new: Vectors | None) -> None:
        before = {row.tobytes() for row in old} if old is not None else set()
        after = {row.tobytes() for row in new} if new is not None else set()
        if before != after:
            self._stale = True
            if self._changed is not None:
                self._changed += len(before ^ after)

    def has(self, slot: int) -> bool:
        return slot in self._rows

    def _compile(self) -> None:
        slots = sorted(self._rows)
        if slots:
            matrix = np.concatenate([self._rows[s] for s in slots])
            counts = np.array([len(self._rows[s]) for s in slots], np.int64)
            self._counts = counts
            self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            centroids = np.stack([self._rows[s].mean(axis=0) for s in slots])
            changed = self._changed
            if changed is None or self._whitening is None or changed > REFIT_CHANGE * self._fitted_on:
                shrinkage = self.shrinkage
                self._whitening = None if shrinkage is None else within_whitening(matrix, counts, shrinkage)
                self._fitted_on, self._changed = len(matrix), 0
            if self._whitening is not None:
                matrix, centroids = matrix @ self._whitening, centroids @ self._whitening
            self._matrix = normalise(matrix)
            self._centroids = normalise(centroids)
        else:
            self._whitening, self._changed = None, None
            self._matrix = np.zeros((0, self.dimension), np.float32)
            self._starts = np.zeros(0, np.int64)
            self._counts = np.zeros(0, np.int64)
            self._centroids = np.zeros((0, self.dimension), np.float32)
        self._owners = np.array(slots, np.int64)
        self._stale = False

    def scores(
        self, query_vector: Vectors, size: int, dense: NDArray[np.float32] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Per slot below `size`: the highest cosine between the query and one of its
        examples, and the cosine with their centroid; NaN where a slot has none. `dense`
        (the description scores, per slot) picks the shortlist on a large catalog."""
        if self._stale:
            self._compile()
        best = np.full(size, np.nan, np.float32)
        centroid = np.full(size, np.nan, np.float32)
        if not len(self._owners):
            return best, centroid
        keep = self._owners < size
        if self._whitening is not None:
            # einsum, not BLAS: see FunctionIndex.score_all.
            query_vector = normalise(np.einsum("ij,j->i", self._whitening, query_vector)[None])[0]
        near = np.einsum("ij,j->i", self._centroids, query_vector)
        if len(self._matrix) <= EXACT_ROWS or dense is None or len(self._owners) <= SHORTLIST:
            cosines = np.einsum("ij,j->i", self._matrix, query_vector)
            found = np.maximum.reduceat(cosines, self._starts)
        else:
            prior = near + dense[np.minimum(self._owners, size - 1)]
            chosen = np.argpartition(-prior, SHORTLIST - 1)[:SHORTLIST]
            counts = self._counts[chosen]
            offsets = np.cumsum(counts) - counts
            rows = (
                np.arange(counts.sum()) - np.repeat(offsets, counts) + np.repeat(self._starts[chosen], counts)
            )
            cosines = np.einsum("ij,j->i", self._matrix[rows], query_vector)
            found = near.copy()
            found[chosen] = np.maximum.reduceat(cosines, offsets)
        best[self._owners[keep]] = found[keep]
        centroid[self._owners[keep]] = near[keep]
        return best, centroid
