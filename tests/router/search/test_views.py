"""Example views kept up to date as examples come and go: the numbers, against a plain computation."""

from __future__ import annotations

import numpy as np

from toolmesh.router.embedding.embedder import Vectors, normalise
from toolmesh.router.search.views import ExampleViews

DIMENSION = 16


def unit_rows(rng: np.random.Generator, count: int) -> Vectors:
    return normalise(rng.standard_normal((count, DIMENSION)).astype(np.float32))


def plain_scores(
    rows: dict[int, Vectors], whitening: Vectors | None, query: Vectors, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """What `ExampleViews.scores` should answer, computed slot by slot with the same map."""

    def prepare(vectors: Vectors) -> Vectors:
        return normalise(vectors @ whitening if whitening is not None else vectors)

    query = prepare(query[None])[0]
    best = np.full(size, np.nan, np.float32)
    centroid = np.full(size, np.nan, np.float32)
    for slot, own in rows.items():
        best[slot] = (prepare(own) @ query).max()
        centroid[slot] = prepare(own.mean(axis=0, keepdims=True))[0] @ query
    return best, centroid


def test_scores_stay_exact_through_any_sequence_of_changes() -> None:
    """Examples learned one by one (in place or outgrowing a segment), replaced, dropped,
    new functions, segments moved and compacted, the whitening fitted again on the way: after
    every change the scores are those of a plain computation over the rows held at that
    moment."""
    rng = np.random.default_rng(11)
    views = ExampleViews(DIMENSION)
    held: dict[int, Vectors] = {}
    size = 30
    for slot in range(0, size, 2):
        held[slot] = unit_rows(rng, int(rng.integers(1, 6)))
        views.set(slot, held[slot])
    fits, dead_seen, compacted = set(), False, False
    for step in range(300):
        slot = int(rng.integers(size))
        action = rng.random()
        if action < 0.6 and slot in held:  # one more learned example
            held[slot] = np.concatenate([held[slot], unit_rows(rng, 1)])
        elif action < 0.8:  # replaced (or new)
            held[slot] = unit_rows(rng, int(rng.integers(1, 12)))
        elif action < 0.9:
            held.pop(slot, None)
            views.drop(slot)
            slot = -1
        if slot in held:
            views.set(slot, held[slot])
        query = unit_rows(rng, 1)[0]
        best, centroid = views.scores(query, size)
        segments = views._segments
        if id(views._whitening) in fits and dead_seen and not (segments.owners < 0).any():
            compacted = True
        dead_seen = dead_seen or bool((segments.owners < 0).any())
        fits.add(id(views._whitening))
        want_best, want_centroid = plain_scores(held, views._whitening, query, size)
        assert np.array_equal(np.isnan(best), np.isnan(want_best)), step
        assert np.allclose(best, want_best, atol=1e-5, equal_nan=True), step
        assert np.allclose(centroid, want_centroid, atol=1e-5, equal_nan=True), step
    assert len(fits) > 3  # the map was fitted again along the way, and kept in between
    assert dead_seen and compacted  # segments moved, and were compacted without a new fit
