"""Value finders that replace a quadratic regex search find exactly what it found."""

from __future__ import annotations

import difflib
import re

from hypothesis import given
from hypothesis import strategies as st

from toolmesh.router.extraction import values as v

# The characters that decide where an address starts and ends, plus some that end it.
address_text = st.text(alphabet="ab1é_.+-@ ,x", max_size=30)


@given(address_text)
def test_emails_finds_what_the_email_pattern_finds(text: str) -> None:
    want = [(m.start(), m.end(), m.group(0)) for m in v.EMAIL.finditer(text)]
    assert [(s.start, s.end, s.text) for s in v.emails(text)] == want


def test_emails_starts_after_the_previous_match_as_a_search_does() -> None:
    assert [s.text for s in v.emails("mail x@a.b+y@c.d and .z@e.org")] == ["x@a.b", "+y@c.d", "z@e.org"]


@given(st.text(alphabet="celsiu fahrenhtkv°%-_ ", max_size=40))
def test_enum_match_skips_only_windows_that_cannot_match(text: str) -> None:
    options = ["celsius", "fahrenheit", "kelvin scale", "c"]
    lowered = text.lower()
    # The unpruned search, as it was: every window of every option scored with ratio().
    tokens = [(m.start(), m.end()) for m in re.finditer(r"[\w°%+-]+", lowered)]
    best = None
    for position, option in enumerate(options):
        phrase = option
        size = len(phrase.split())
        for i in range(len(tokens) - size + 1):
            start, end = tokens[i][0], tokens[i + size - 1][1]
            window = lowered[start:end]
            if size == 1 and len(phrase) <= 3:
                ratio = 1.0 if window == phrase else 0.0
            else:
                ratio = difflib.SequenceMatcher(None, window, phrase).ratio()
            if ratio >= 0.8 and (best is None or ratio > best[0] + 1e-9):
                best = (ratio, position, option, (start, end))
    found = v.enum_match(text, options)
    assert (None if found is None else (found[0], (found[1].start, found[1].end))) == (
        None if best is None else (best[2], best[3])
    )
