"""Typed values found in free text: URLs, emails, quoted strings, numbers with units, places, enums.

Every finder returns spans, so the extractor can tell which words are already
taken (the "5" in "2024-05-01" is not a count, the "in" of "in 3 days" is no place).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolmesh.router.search.text import split_identifier, words

URL = re.compile(r"\bhttps?://[^\s<>\"'()]+[^\s<>\"'().,;:!?]", re.I)
#: What an email address looks like. `emails` finds exactly what this finds, in linear time.
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# The pieces `emails` puts together: a run of address characters up to an "@" (from the run's
# start only), the domain after it, and where a match may start.
_LOCAL_PART = re.compile(r"(?<![\w.+-])[\w.+-]*@")
_DOMAIN = re.compile(r"[\w-]+(?:\.[\w-]+)+\b")
_BOUNDARY = re.compile(r"\b")
# Straight, curly (U+201C/D, U+2018/9) and back quotes.
QUOTED = re.compile(
    r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|(?<!\w)'([^']+)'(?!\w)|\u2018([^\u2019]+)\u2019|`([^`]+)`"
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<currency>[$€£¥])?\s?(?P<value>[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d*\.?\d+)"
    r"(?:\s*(?P<unit>%|°\s?[cf]\b|[a-z]+(?:\s?/\s?[a-z]+)?))?",
    re.I,
)
_SMALL_NUMBERS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
)
_WORD_NUMBERS = {w: n for n, w in enumerate(_SMALL_NUMBERS.split())} | {
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "hundred": 100,
    "dozen": 12,
    "a couple": 2,
}
_WORD_NUMBER = re.compile(
    r"\b(" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) + r")\b(?:\s+(?P<unit>[a-z]+))?", re.I
)

# Units by dimension, as multiples of the dimension's base unit.
UNITS: dict[str, tuple[str, float]] = {}
for dimension, table in {
    "time": {
        ("ms", "millisecond", "milliseconds"): 0.001,
        ("s", "sec", "secs", "second", "seconds"): 1,
        ("min", "mins", "minute", "minutes"): 60,
        ("h", "hr", "hrs", "hour", "hours"): 3600,
        ("day", "days"): 86400,
        ("week", "weeks"): 604800,
    },
    "length": {
        ("mm", "millimeter", "millimeters"): 0.001,
        ("cm", "centimeter", "centimeters"): 0.01,
        ("m", "meter", "meters", "metre", "metres"): 1,
        ("km", "kilometer", "kilometers", "kilometres"): 1000,
        ("mi", "mile", "miles"): 1609.344,
        ("ft", "foot", "feet"): 0.3048,
        ("in", "inch", "inches"): 0.0254,
    },
    "mass": {
        ("g", "gram", "grams"): 1,
        ("kg", "kilo", "kilos", "kilogram", "kilograms"): 1000,
        ("lb", "lbs", "pound", "pounds"): 453.59237,
        ("oz", "ounce", "ounces"): 28.349523125,
    },
}.items():
    for names, factor in table.items():
        for name in names:
            UNITS[name] = (dimension, factor)


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Number:
    start: int
    end: int
    value: float
    unit: str  # lowercased, "" when none; "%" and currency symbols included

    def convert(self, target: str) -> float | None:
        """The value in `target` units when both units share a dimension; None otherwise."""
        source, goal = UNITS.get(self.unit), UNITS.get(target)
        if source is None or goal is None or source[0] != goal[0]:
            return None
        return self.value * source[1] / goal[1]


def spans(pattern: re.Pattern[str], text: str) -> list[Span]:
    return [
        Span(m.start(), m.end(), next((g for g in m.groups() if g is not None), m.group(0)))
        for m in pattern.finditer(text)
    ]


def urls(text: str) -> list[Span]:
    return spans(URL, text)


def emails(text: str) -> list[Span]:
    """What `EMAIL.finditer` finds. Searching with `EMAIL` itself is quadratic: from every
    word boundary inside a run of address characters ("a.a.a.a..." has one per letter) it
    reads the run again to its end. Here each run and each domain is read once: a match
    ends where its "@"'s domain does, and starts at the run's first word boundary (not before
    where the previous match ended, which a search would not look at again)."""
    found: list[Span] = []
    resume = 0
    for local in _LOCAL_PART.finditer(text):
        at = local.end() - 1
        domain = _DOMAIN.match(text, at + 1)
        if domain is None:
            continue
        boundary = _BOUNDARY.search(text, max(local.start(), resume))
        if boundary is None or boundary.start() >= at:
            continue
        found.append(Span(boundary.start(), domain.end(), text[boundary.start() : domain.end()]))
        resume = domain.end()
    return found


def numbers(text: str) -> list[Number]:
    """Numbers in digits or small number words, each with the unit that follows it, if any."""
    found = []
    for m in _NUMBER.finditer(text):
        value = float(m.group("value").replace(",", ""))
        unit = (m.group("unit") or "").lower().replace(" ", "")
        if unit and unit not in UNITS and unit != "%" and not unit.startswith("°") and "/" not in unit:
            unit = ""  # an ordinary word after the number ("5 apples"): keep it as context only
        if m.group("currency"):
            unit = m.group("currency")
        end = m.end() if unit else m.end("value")
        found.append(Number(m.start(), end, value, unit))
    for m in _WORD_NUMBER.finditer(text):
        unit = (m.group("unit") or "").lower()
        unit = unit if unit in UNITS else ""
        found.append(
            Number(m.start(), m.end() if unit else m.end(1), float(_WORD_NUMBERS[m.group(1).lower()]), unit)
        )
    return sorted(found, key=lambda n: n.start)


# A place is a run of capitalised words after a preposition ("in New York", "to São Paulo"),
# or, in an all-lowercase prompt, up to three words after one.
_PREPOSITION = re.compile(r"\b(in|for|at|to|from|near|around|of)\s+(?=[^\W\d_])", re.I)
_PLACE_WORD = re.compile(r"[^\W\d_][\w'.-]*")
_PLACE_GAP = re.compile(r"\s+|,\s*")
_PLACE_STOP = words(
    "a an the and or but with without on at by for to from in of this that next today tomorrow tonight "
    "yesterday please now then week weeks day days hours minutes celsius fahrenheit me my our their"
)


def places(text: str) -> list[tuple[str, Span]]:
    """(preposition, place) pairs in order of appearance; capitalised ones only, if there are any."""
    found: list[tuple[str, Span, bool]] = []
    for m in _PREPOSITION.finditer(text):
        kept: list[re.Match[str]] = []
        position = m.end()
        capitalised = text[position].isupper()
        while len(kept) < 4:
            word = _PLACE_WORD.match(text, position)
            if word is None:
                break
            bare = word.group(0).rstrip(".")
            if bare.lower() in _PLACE_STOP or (capitalised and not bare[:1].isupper()):
                break
            kept.append(word)
            gap = _PLACE_GAP.match(text, word.end())  # not text[word.end():], a copy per word
            if gap is None:
                break
            position = gap.end()
        if kept and (capitalised or len(kept) <= 3):
            end = kept[-1].start() + len(kept[-1].group(0).rstrip("."))
            found.append((m.group(1).lower(), Span(m.end(), end, text[m.end() : end]), capitalised))
    if any(capital for _, _, capital in found):
        found = [entry for entry in found if entry[2]]
    return [(prep, span) for prep, span, _ in found]


def enum_match(text: str, options: Sequence[object], cutoff: float = 0.8) -> tuple[object, Span] | None:
    """The option named in `text` (exactly, or fuzzily: "farenheit"), with where."""
    lowered = text.lower()
    tokens = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[\w°%+-]+", lowered)]
    best: tuple[float, int, object, Span] | None = None
    for position, option in enumerate(options):
        phrase = split_identifier(str(option)) if isinstance(option, str) else str(option)
        if not phrase:
            continue
        size = len(phrase.split())
        # One matcher per option: it analyses the phrase once, not once per window.
        matcher = difflib.SequenceMatcher(None, "", phrase)
        for i in range(len(tokens) - size + 1):
            start, end = tokens[i][0], tokens[i + size - 1][1]
            window = lowered[start:end]
            bar = cutoff if best is None else max(cutoff, best[0] + 1e-9)
            if size == 1 and len(phrase) <= 3:
                ratio = 1.0 if window == phrase else 0.0  # short codes only match exactly
            elif _length_bound(window, phrase) < bar:
                continue  # ratio() is at most this bound: skip its quadratic-in-the-window work
            else:
                matcher.set_seq1(window)
                if matcher.quick_ratio() < bar:
                    continue
                ratio = matcher.ratio()
            if ratio >= cutoff and (best is None or ratio > best[0] + 1e-9):
                best = (ratio, position, option, Span(start, end, text[start:end]))
    return None if best is None else (best[2], best[3])


def _length_bound(a: str, b: str) -> float:
    """`SequenceMatcher.real_quick_ratio` without building a matcher: at most min(len) characters match."""
    total = len(a) + len(b)
    return 2.0 * min(len(a), len(b)) / total if total else 1.0
