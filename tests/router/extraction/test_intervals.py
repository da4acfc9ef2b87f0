"""The taken-stretches set answers exactly as the list of every interval added would."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolmesh.router.extraction.intervals import Intervals

interval = st.tuples(st.integers(0, 40), st.integers(0, 12)).map(lambda t: (t[0], t[0] + t[1]))


def naive_overlaps(added: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a < end and start < b for a, b in added)


@given(st.lists(st.tuples(st.booleans(), interval), max_size=40))
def test_overlaps_answers_as_the_list_of_everything_added(steps: list[tuple[bool, tuple[int, int]]]) -> None:
    taken = Intervals()
    added: list[tuple[int, int]] = []
    for add, (start, end) in steps:
        if add:
            taken.add(start, end)
            added.append((start, end))
        else:
            assert taken.overlaps(start, end) == naive_overlaps(added, start, end), (added, start, end)
    for start in range(0, 54):
        for end in range(start, start + 4):
            assert taken.overlaps(start, end) == naive_overlaps(added, start, end), (added, start, end)


def test_overlapping_intervals_merge_and_touching_ones_do_not() -> None:
    taken = Intervals()
    for start, end in [(0, 5), (3, 8), (8, 10), (20, 20)]:
        taken.add(start, end)
    assert len(taken) == 3  # (0, 8), (8, 10) and the empty (20, 20)
    assert not taken.overlaps(10, 20) and taken.overlaps(19, 21) and not taken.overlaps(20, 25)
