"""Stretches of a prompt already taken, asked "does this one overlap any?" in O(log n).

Extraction asks that question once per candidate value, and a hostile prompt can
hold thousands of values (numbers, dates, URLs set aside), so a list scanned on
every question made one request quadratic in the prompt's length.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class Intervals:
    """Half-open ``[start, end)`` intervals. Two overlap when each starts before the other
    ends (so touching intervals do not, and an empty one overlaps what strictly contains it).

    Overlapping intervals are merged on `add`, which answers every `overlaps` question as
    the unmerged list would; what remains never overlaps, so sorted by start it is sorted
    by end too, and both questions are binary searches.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def __len__(self) -> int:
        return len(self._starts)

    def overlaps(self, start: int, end: int) -> bool:
        # Of the intervals starting before `end`, the last one ends latest.
        before = bisect_left(self._starts, end)
        return before > 0 and self._ends[before - 1] > start

    def add(self, start: int, end: int) -> None:
        first = bisect_right(self._ends, start)  # the first that ends after `start`
        stop = bisect_left(self._starts, end)  # past the last that starts before `end`
        if first < stop:
            start = min(start, self._starts[first])
            end = max(end, self._ends[stop - 1])
        else:
            # Nothing overlaps: insert where both lists stay sorted. Only an empty interval at
            # the very start of others can see first > stop; it belongs before them.
            first = stop = min(first, stop)
        self._starts[first:stop] = [start]
        self._ends[first:stop] = [end]
