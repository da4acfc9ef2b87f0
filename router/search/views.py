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
Fitting the whitening is the costly part (~0.2-1 s for 20,000 rows; the eigendecomposition
alone, tens of milliseconds at any size), so it is fitted again only when the rows have
changed by more than `REFIT_CHANGE` since the last fit, and the router fits it in a thread
of its own (`snapshot` / `install`) while routes go on with the map they have.

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
from toolmesh.router.search.segments import SegmentMatrix
from toolmesh.router.search.whitening import SHRINKAGE, Fitted, Snapshot, whitened_slots

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
        #: Example rows added or removed so far; that count when the whitening was fitted (None:
        #: never), and how many rows it was fitted on.
        self._changes = 0
        self._fit_mark: int | None = None
        self._fitted_on = 0
        #: Whether a `snapshot` is out being fitted (see `install`).
        self._fitting = False
        #: Per slot: its example rows as given; and as compared (whitened, unit length), with
        #: their centroid, once computed.
        self._rows: dict[int, Vectors] = {}
        self._whitened: dict[int, tuple[Vectors, Vectors]] = {}
        #: Slots whose rows changed since the segments were last brought up to date, and
        #: whether all of them must be laid out anew (a new whitening arrived).
        self._dirty: set[int] = set()
        self._relayout = False
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
            self._whitened.pop(slot, None)
            self._changes += len(before ^ after)

    def has(self, slot: int) -> bool:
        return slot in self._rows

    # -- fitting the whitening ---------------------------------------------------------------

    @property
    def refit_due(self) -> bool:
        """Whether the rows changed by more than `REFIT_CHANGE` since the whitening was fitted."""
        if not self._rows:
            return False
        return self._fit_mark is None or self._changes - self._fit_mark > REFIT_CHANGE * self._fitted_on

    def snapshot(self) -> Snapshot | None:
        """The rows to fit the whitening on elsewhere, when a fit is due and none is out
        already; the fit (or None, if it failed) must come back through `install`. Until it
        does, changes are whitened with the map in use."""
        if self._fitting or not self.refit_due:
            return None
        self._fitting = True
        return self._snapshot()

    def _snapshot(self) -> Snapshot:
        return Snapshot(dict(self._rows), self.shrinkage, self._changes)

    def install(self, fitted: Fitted | None) -> None:
        """Use a fit made on a `snapshot` from the next update on."""
        self._fitting = False
        if fitted is not None:
            self._use(fitted)

    def _use(self, fitted: Fitted) -> None:
        rows = fitted.snapshot.rows
        self._whitening = fitted.whitening
        self._fit_mark, self._fitted_on = fitted.snapshot.changes, sum(len(r) for r in rows.values())
        # Rows changed since the snapshot are whitened again at the layout.
        self._whitened = {s: w for s, w in fitted.whitened.items() if self._rows.get(s) is rows[s]}
        self._relayout = True

    # -- keeping the segments up to date -----------------------------------------------------

    def _update(self) -> None:
        """Bring the segments up to date with the rows: write the changed slots' segments
        (compacting when moved segments left too many dead ones), or lay all of them out anew
        after a new fit. A fit that is due and not out elsewhere is made here (never fitted:
        always), on the route path: what an index without a router to fit it pays."""
        if self.refit_due and (not self._fitting or self._fit_mark is None):
            self._use(self._snapshot().fit())
        if not self._relayout:
            live = [s for s in sorted(self._dirty) if s in self._rows]
            self._whitened.update(whitened_slots(self._rows, live, self._whitening))
            for slot in self._dirty:
                if slot in self._rows:
                    self._segments.put(slot, *self._whitened[slot])
                else:
                    self._segments.remove(slot)
        if self._relayout or self._segments.wasted:
            missing = [s for s in self._rows if s not in self._whitened]
            self._whitened.update(whitened_slots(self._rows, missing, self._whitening))
            self._segments.compact(self._whitened)
        self._dirty.clear()
        self._relayout = False

    def scores(
        self, query_vector: Vectors, size: int, dense: NDArray[np.float32] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Per slot below `size`: the highest cosine between the query and one of its
        examples, and the cosine with their centroid; NaN where a slot has none. `dense`
        (the description scores, per slot) picks the shortlist on a large catalog."""
        if self._dirty or self._relayout:
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
