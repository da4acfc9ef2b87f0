"""A linear map fitted on the catalog's examples: directions that tell functions apart count more.

Example prompts of one function share their task words ("an API that classifies images")
with the examples of every function doing a similar task; the embedding spends most of its
length on those. The within-function scatter of the examples measures that spread: what
varies between prompts for the *same* function says nothing about which function is meant.
Whitening with it (as linear discriminant analysis does, shrunk toward the identity so that
a few examples cannot make it singular) shrinks those directions and stretches the rest,
and the example views (views.py) compare query and examples in the whitened space.

Fitted at index time in numpy (one ``dimension x dimension`` eigendecomposition); at route
time it is one matrix-vector product. Chosen by cross-validation on APIBench TorchHub's
training prompts, never its evaluation prompts (bench/RESULTS.md).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

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
