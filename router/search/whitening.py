"""A linear map fitted on the catalog's examples: directions that tell functions apart count more.

Example prompts of one function share their task words ("an API that classifies images")
with the examples of every function doing a similar task; the embedding spends most of its
length on those. The within-function scatter of the examples measures that spread: what
varies between prompts for the *same* function says nothing about which function is meant.
Whitening with it (as linear discriminant analysis does, shrunk toward the identity so that
a few examples cannot make it singular) shrinks those directions and stretches the rest,
and the example views (views.py) compare query and examples in the whitened space.

Fitted at index time in numpy (one ``dimension x dimension`` eigendecomposition); at route
time it is one matrix-vector product. A fit can be made on a `Snapshot` of the rows in
another thread (the router does, so that no route waits for one). Chosen by
cross-validation on APIBench TorchHub's training prompts, never its evaluation prompts
(bench/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from toolmesh.router.embedding.embedder import Vectors, normalise

#: Weight of the identity in the shrunk scatter, ``(1 - s) * within + s * mean variance * I``:
#: flat from 0.1 to 0.5 under cross-validation; 1.0 would be no whitening.
SHRINKAGE = 0.3


def within_whitening(
    rows: NDArray[np.float32], counts: NDArray[np.int64], shrinkage: float = SHRINKAGE
) -> NDArray[np.float32] | None:
    """The symmetric inverse square root of the shrunk within-function scatter of `rows`
    (grouped by function: the first `counts[0]` rows are one function's, and so on), or
    None when it has nothing to learn from: no function with two examples, or no spread."""
    dimension = rows.shape[1]
    if len(rows) <= len(counts) or shrinkage >= 1:
        return None
    starts = np.cumsum(counts) - counts
    means = np.add.reduceat(rows, starts) / counts[:, None]
    residuals = rows - np.repeat(means, counts, axis=0)
    scatter = residuals.T @ residuals / (len(rows) - len(counts))
    spread = float(np.trace(scatter)) / dimension
    if spread <= 1e-12:
        return None
    shrunk = (1 - shrinkage) * scatter + shrinkage * spread * np.eye(dimension)
    values, vectors = np.linalg.eigh(shrunk)
    # Scaled by sqrt(spread) so that the map is the identity at shrinkage 1 (cosines only
    # see directions, but this keeps the numbers near 1).
    whitening: NDArray[np.float32] = ((vectors / np.sqrt(values / spread)) @ vectors.T).astype(np.float32)
    return whitening


def whiten(vectors: NDArray[np.float32], whitening: NDArray[np.float32] | None) -> Vectors:
    """`vectors` in the whitened space (as they are when `whitening` is None), unit length."""
    return normalise(vectors @ whitening if whitening is not None else vectors)


def whitened_slots(
    rows: Mapping[int, Vectors], slots: Sequence[int], whitening: NDArray[np.float32] | None
) -> dict[int, tuple[Vectors, Vectors]]:
    """Per slot: its rows whitened, and their centroid whitened (one product for all of each)."""
    if not slots:
        return {}
    counts = [len(rows[s]) for s in slots]
    whitened = whiten(np.concatenate([rows[s] for s in slots]), whitening)
    centroids = whiten(np.stack([rows[s].mean(axis=0) for s in slots]), whitening)
    split = np.split(whitened, np.cumsum(counts)[:-1])
    return {slot: (own, centroid) for slot, own, centroid in zip(slots, split, centroids, strict=True)}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The example rows at one moment, to fit the whitening on away from the route path.
    `changes` is the views' count of changed rows then: those after it count toward the next fit."""

    rows: dict[int, Vectors]
    shrinkage: float | None
    changes: int

    def fit(self) -> Fitted:
        slots = sorted(self.rows)
        whitening = None
        if slots and self.shrinkage is not None:
            matrix = np.concatenate([self.rows[s] for s in slots])
            counts = np.array([len(self.rows[s]) for s in slots], np.int64)
            whitening = within_whitening(matrix, counts, self.shrinkage)
        return Fitted(self, whitening, whitened_slots(self.rows, slots, whitening))


@dataclass(frozen=True, slots=True)
class Fitted:
    """A whitening fitted on a snapshot, and the snapshot's rows whitened with it."""

    snapshot: Snapshot
    whitening: Vectors | None
    whitened: dict[int, tuple[Vectors, Vectors]]
