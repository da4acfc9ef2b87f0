"""The segment matrix: rows written in place, moved when they outgrow their room, compacted."""

from __future__ import annotations

import numpy as np

from toolmesh.router.embedding.embedder import Vectors
from toolmesh.router.search.segments import DEAD_SHARE, GROWTH, SegmentMatrix


def rows(first: int, count: int) -> Vectors:
    """`count` distinct rows of width 2: (first, 0), (first + 1, 0), ..."""
    return np.array([[first + i, 0.0] for i in range(count)], np.float32)


def segment_of(segments: SegmentMatrix, owner: int) -> Vectors:
    (index,) = np.flatnonzero(segments.owners == owner)
    start, length = segments.starts[index], segments.lengths[index]
    return segments.matrix[start : start + length]


def test_rows_that_fit_are_written_in_place_and_the_rest_move_to_the_end() -> None:
    segments = SegmentMatrix(2)
    segments.compact({owner: (rows(10 * owner, 2), rows(-owner, 1)[0]) for owner in range(4)})
    assert list(segments.owners) == [0, 1, 2, 3] and list(segments.lengths) == [2, 2, 2, 2]
    buffer = segments.matrix.base

    segments.put(1, rows(100, 1), rows(-9, 1)[0])  # fewer rows: repeated to fill the segment
    assert segments.matrix.base is buffer and list(segments.owners) == [0, 1, 2, 3]
    assert segment_of(segments, 1)[:, 0].tolist() == [100, 100]
    assert segments.centroids[1].tolist() == [-9, 0]

    segments.put(1, rows(200, 3), rows(-7, 1)[0])  # outgrows: a new segment with room to spare
    assert list(segments.owners) == [0, -1, 2, 3, 1]
    assert segment_of(segments, 1)[:, 0].tolist() == [200 + i % 3 for i in range(3 + GROWTH)]
    assert segments.centroids[4].tolist() == [-7, 0]
    assert segment_of(segments, 0)[:, 0].tolist() == [0, 1]  # the others untouched
    assert len(segments) == 4

    segments.put(1, rows(300, 3 + GROWTH), rows(-5, 1)[0])  # its new room: in place again
    assert list(segments.owners) == [0, -1, 2, 3, 1]


def test_dead_segments_are_compacted_and_each_owner_keeps_its_room() -> None:
    segments = SegmentMatrix(2)
    held = {owner: (rows(10 * owner, 2), rows(-owner, 1)[0]) for owner in range(4)}
    segments.compact(held)
    segments.remove(3)
    del held[3]
    assert list(segments.owners) == [0, 1, 2, -1] and not segments.wasted  # 2 of 8 rows dead
    held[0] = (rows(50, 3), rows(-50, 1)[0])
    segments.put(0, *held[0])
    assert not segments.wasted and 4 / len(segments.matrix) < DEAD_SHARE  # 4 of 19 rows dead
    segments.remove(1)
    del held[1]
    assert segments.wasted  # 6 of 19
    segments.compact(held)
    assert list(segments.owners) == [0, 2] and not segments.wasted
    assert list(segments.lengths) == [3 + GROWTH, 2]
    assert segment_of(segments, 0)[:, 0].tolist() == [50 + i % 3 for i in range(3 + GROWTH)]
    assert segment_of(segments, 2)[:, 0].tolist() == [20, 21]


def test_the_matrix_grows_and_keeps_what_it_held() -> None:
    segments = SegmentMatrix(2)
    segments.compact({})
    for owner in range(200):
        segments.put(owner, rows(owner * 1000, 1 + owner % 5), rows(owner, 1)[0])
    for owner in range(200):
        want = [owner * 1000 + i % (1 + owner % 5) for i in range(1 + owner % 5 + GROWTH)]
        assert segment_of(segments, owner)[:, 0].tolist() == want
    assert segments.centroids[:, 0].tolist() == list(range(200))
