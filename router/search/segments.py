"""Rows grouped by owner in one matrix, changed one owner at a time without copying the rest.

The example views (views.py) score every example row of every function with one
matrix-vector product and take each function's best with one segmented max, so the rows
must sit in one matrix, each function's in one run (its *segment*). A prompt learned from
use changes one function's rows: rebuilding the matrix for that (20,000 rows on a
2,000-function catalog: ~70 ms, paid by the next route) would make a gateway that learns
from every call route an order of magnitude slower. So:

- a segment has room to spare: its rows are repeated to fill it (a repeated row leaves the
  segment's best cosine as it is), and rows that still fit are written in place;
- rows that no longer fit move to a new segment at the end, with `GROWTH` rows to spare,
  and the old one is left *dead* (owner -1, skipped by the reader) until a compaction;
- the matrix has room to spare at its end too, so moving a segment copies only its rows.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from toolmesh.router.embedding.embedder import Vectors

#: Spare rows given to an owner whose rows outgrew their segment (a function learning from use).
GROWTH = 8
#: Share of the matrix in dead segments past which `wasted` says it is time to compact.
DEAD_SHARE = 0.25

Scalar = TypeVar("Scalar", bound=np.generic)


class SegmentMatrix:
    """Per owner (an index slot), its rows and one more vector (their centroid)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._rows = np.zeros((0, dimension), np.float32)
        self._used = 0
        # Per segment, in matrix order: owner (-1: dead), first row, length, centroid.
        self._owners = np.zeros(0, np.int64)
        self._starts = np.zeros(0, np.int64)
        self._lengths = np.zeros(0, np.int64)
        self._centroids = np.zeros((0, dimension), np.float32)
        self._count = 0
        self._segment: dict[int, int] = {}
        self._dead = 0

    def __len__(self) -> int:
        """How many owners have a segment."""
        return len(self._segment)

    # -- what scoring reads (views of the live parts; dead segments have owner -1) ---------

    @property
    def matrix(self) -> Vectors:
        return self._rows[: self._used]

    @property
    def owners(self) -> NDArray[np.int64]:
        return self._owners[: self._count]

    @property
    def starts(self) -> NDArray[np.int64]:
        return self._starts[: self._count]

    @property
    def lengths(self) -> NDArray[np.int64]:
        return self._lengths[: self._count]

    @property
    def centroids(self) -> Vectors:
        return self._centroids[: self._count]

    @property
    def wasted(self) -> bool:
        """Whether dead segments hold enough of the matrix to be worth a `compact`."""
        return self._dead > DEAD_SHARE * self._used

    # -- changes -------------------------------------------------------------------------------

    def compact(self, rows: dict[int, tuple[Vectors, Vectors]]) -> None:
        """Lay out exactly these owners' rows (and centroids), in owner order, no dead
        segments; an owner keeps the spare room its segment had."""
        owners = sorted(rows)
        counts = np.array([len(rows[o][0]) for o in owners], np.int64)
        lengths = np.array(
            [max(count, self._length_of(o)) for o, count in zip(owners, counts, strict=True)], np.int64
        )
        starts = np.cumsum(lengths) - lengths
        total = int(lengths.sum())
        self._rows = np.empty((total + total // 8, self.dimension), np.float32)
        if owners:
            # Every segment at once: row i of a segment is its owner's row i mod its count.
            stacked = np.concatenate([rows[o][0] for o in owners])
            within = np.arange(total) - np.repeat(starts, lengths)
            first = np.cumsum(counts) - counts
            self._rows[:total] = stacked[np.repeat(first, lengths) + within % np.repeat(counts, lengths)]
        self._used = total
        self._owners = np.array(owners, np.int64)
        self._starts = starts.astype(np.int64)
        self._lengths = lengths
        self._centroids = (
            np.stack([rows[o][1] for o in owners]) if owners else np.zeros((0, self.dimension), np.float32)
        )
        self._count = len(owners)
        self._segment = {o: i for i, o in enumerate(owners)}
        self._dead = 0

    def put(self, owner: int, rows: Vectors, centroid: Vectors) -> None:
        """Set an owner's rows: in its segment when they fit, else in a new one at the end."""
        segment = self._segment.get(owner)
        if segment is not None and len(rows) > self._lengths[segment]:
            self.remove(owner)
            segment = None
        if segment is None:
            segment = self._append(owner, len(rows) + GROWTH)
        start, length = int(self._starts[segment]), int(self._lengths[segment])
        self._rows[start : start + length] = rows[np.arange(length) % len(rows)]
        self._centroids[segment] = centroid

    def remove(self, owner: int) -> None:
        segment = self._segment.pop(owner, None)
        if segment is not None:
            self._owners[segment] = -1
            self._dead += int(self._lengths[segment])

    def _length_of(self, owner: int) -> int:
        segment = self._segment.get(owner)
        return int(self._lengths[segment]) if segment is not None else 0

    def _append(self, owner: int, length: int) -> int:
        start, segment = self._used, self._count
        self._rows = _room(self._rows, start + length)
        self._owners = _room(self._owners, segment + 1)
        self._starts = _room(self._starts, segment + 1)
        self._lengths = _room(self._lengths, segment + 1)
        self._centroids = _room(self._centroids, segment + 1)
        self._owners[segment], self._starts[segment], self._lengths[segment] = owner, start, length
        self._used += length
        self._count += 1
        self._segment[owner] = segment
        return segment


def _room(array: NDArray[Scalar], length: int) -> NDArray[Scalar]:
    """`array`, or a copy with room for at least `length` rows (its size doubled at least)."""
    if length <= len(array):
        return array
    grown = np.zeros((max(length, 2 * len(array)), *array.shape[1:]), array.dtype)
    grown[: len(array)] = array
    return grown
