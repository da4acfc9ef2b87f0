"""Enum choices read from a prompt, without guessing.

Every mention of an enum's options is found first ("98.6 fahrenheit to celsius" mentions
two temperature units; "98.6 F to C" too, by initials right after a number or a "to"),
and then shared out among the parameters that take that enum: a mention goes to at
most one parameter, "to/into/in <option>" goes to the target of a from/to pair, and the
first other mention to its source. A parameter left without a mention stays empty (its
default, or a question, comes later); one that alone faces two different options it
cannot tell apart is *unclear*: the executor asks rather than picking one. A target left
without a mention while the prompt names one that is not among the options ("100
fahrenheit to rankine", "100 dollars to bitcoin") is *unknown*: its default would
contradict the prompt, so the executor asks for that too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolmesh.router.extraction import values as v
from toolmesh.router.extraction.currencies import CODES, code_of, currency_mentions
from toolmesh.router.search.text import STOPWORDS, split_identifier, words

if TYPE_CHECKING:
    from toolmesh.router.extraction.extract import Param, _Text

_TO_CUES = words("to into in as")
_FROM_CUES = words("from")
_TO_PARAM = words("to target destination into output end")
_FROM_PARAM = words("from source origin input start")
# A lone capital letter (or "°F") that may stand for an option: "98.6 F to C".
_INITIAL = re.compile(r"(?<![A-Za-z°])(°?)([A-Z])(?![\w])")
_NUMBER_END = re.compile(r"\d\s*$")
_NUMBER_START = re.compile(r"\s*\d")
_FIRST_NUMBER = re.compile(r"\d")
_CURRENCY_WORDS = words("currency currencies")
# "to rankine", "into bitcoin", "in centigrade": what a conversion's target may be named after.
_TARGET = re.compile(r"\b(?:to|into|in)\s+([a-z][a-z-]*)", re.I)
# Words after "to"/"in" that start something else than a target ("to see if", "in my oven").
_NOT_TARGETS = STOPWORDS | words("see check know find make tell show compare convert degrees units")
#: Other names of common options, which no fuzzy match finds ("100 F in centigrade").
_ALIASES = {"celsius": ("centigrade",)}


@dataclass(frozen=True, slots=True)
class Mention:
    option: object
    start: int
    end: int
    #: "to" or "from" when the word just before says which side of a pair it is on.
    cue: str = ""
    #: Whether choosing it takes its text from the prompt (so nothing else reads it).
    take: bool = True


def _cue(text: _Text, start: int, end: int) -> str:
    before = text.lower[:start].rstrip(" °")
    word = before.rsplit(None, 1)[-1] if before.strip() else ""
    if word in _TO_CUES or word in _FROM_CUES:
        return "to" if word in _TO_CUES else "from"
    unit = _NUMBER_END.search(text.text[:start]) or _NUMBER_START.match(text.text, end)
    return "from" if unit else ""


def options_of(param: Param) -> tuple[object, ...]:
    """What a parameter chooses among: its enum, or the currency codes for a string
    parameter whose name or description says currency."""
    enum = param.schema.get("enum")
    if enum:
        return tuple(enum)
    if param.type == "string" and param.about_words & _CURRENCY_WORDS:
        return CODES
    return ()


def mentions(text: _Text, options: Sequence[object]) -> list[Mention]:
    """The free, non-overlapping mentions of `options` in the prompt, in order."""
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(option: object, start: int, end: int, *, take: bool = True) -> None:
        if text.free(start, end) and not any(a < end and start < b for a, b in taken):
            found.append(Mention(option, start, end, _cue(text, start, end), take))
        taken.append((start, end))

    currencies = {code: option for option in options if (code := code_of(option)) is not None}
    named = [option for option in options if code_of(option) is None]
    for _ in range(len(text.text)):  # best match first, then the next best in what is left
        hit = v.enum_match(_masked(text.text, taken), named)
        if hit is None:
            break
        add(hit[0], hit[1].start, hit[1].end)
    for option in named:
        for alias in _ALIASES.get(str(option).lower(), ()):
            for match in re.finditer(rf"\b{alias}\b", text.text, re.I):
                add(option, match.start(), match.end())
    for mention in currency_mentions(text.text) if currencies else ():
        if mention.code in currencies:
            # "$100", "100 pounds": the number keeps its text (it may have read it as its unit).
            unit = mention.symbol or bool(_NUMBER_END.search(text.text[: mention.start]))
            add(currencies[mention.code], mention.start, mention.end, take=not unit)
    initials: dict[str, list[object]] = {}
    for option in named:
        phrase = split_identifier(str(option))
        if phrase:
            initials.setdefault(phrase[0], []).append(option)
    for m in _INITIAL.finditer(text.text):
        candidates = initials.get(m.group(2).lower(), [])
        after_number = bool(_NUMBER_END.search(text.text[: m.start()]))
        if len(candidates) == 1 and (m.group(1) or after_number or _cue(text, m.start(), m.end())):
            # "98.6°F": the "°F" is also the number's unit, so the number keeps its text.
            add(candidates[0], m.start(), m.end(), take=not m.group(1))
    return sorted(found, key=lambda mention: mention.start)


def _masked(text: str, taken: list[tuple[int, int]]) -> str:
    """`text` with the stretches already matched blanked out (same length, same offsets)."""
    for start, end in taken:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _side(param: Param) -> str:
    tokens = param.tokens
    return "to" if tokens & _TO_PARAM else "from" if tokens & _FROM_PARAM else ""


def _named_target(text: _Text, after: int) -> str | None:
    """The first word past `after` that the prompt names as a target ("to X", "into X",
    "in X") and that nothing has read yet: no option matched it."""
    for match in _TARGET.finditer(text.text, after):
        word = match.group(1).lower()
        if word not in _NOT_TARGETS and text.free(match.start(1), match.end(1)):
            return word
    return None


def choose(params: Sequence[Param], text: _Text) -> tuple[dict[str, object], list[str], dict[str, str]]:
    """Values for the enum parameters the prompt settles; the ones it leaves unclear; and
    targets it names with a word that is none of their options (parameter -> that word).
    The mentions used are taken from `text`."""
    chosen: dict[str, object] = {}
    unclear: list[str] = []
    groups: dict[tuple[str, ...], list[Param]] = {}
    for param in params:
        if offered := options_of(param):
            groups.setdefault(tuple(map(str, offered)), []).append(param)
    # Where the conversion starts: its value or the first option named ("I'd like to turn
    # 100 F..." names no target in "to turn").
    number = _FIRST_NUMBER.search(text.text)
    start = number.start() if number else len(text.text)
    for group in groups.values():
        found = mentions(text, options_of(group[0]))
        if not found:
            continue
        start = min(start, found[0].start)
        used: set[int] = set()

        def give(param: Param, mention: Mention, used: set[int] = used) -> None:
            chosen[param.name] = mention.option
            used.add(mention.start)
            if mention.take:
                text.take(mention.start, mention.end)

        if len(group) == 1:
            param = group[0]
            distinct = {m.option for m in found}
            if len(distinct) == 1:
                give(param, found[0])
            else:
                side = _side(param)
                cued = [m for m in found if side and m.cue == side]
                if len(cued) == 1:
                    give(param, cued[0])
                else:
                    unclear.append(param.name)
            continue
        # A pair (or more) sharing one enum: cues first, then the rest in order.
        for side in ("to", "from"):
            for param in group:
                if _side(param) == side and param.name not in chosen:
                    first = next((m for m in found if m.cue == side and m.start not in used), None)
                    if first is not None:
                        give(param, first)
        ordered = sorted(group, key=lambda p: {"from": 0, "": 1, "to": 2}[_side(p)])
        for param in ordered:
            if param.name in chosen:
                continue
            # An uncued mention fits any side; a "to X" never becomes a source, nor a
            # "from X" a target.
            side = _side(param)
            free = next((m for m in found if m.start not in used and m.cue in ("", side)), None)
            if free is not None:
                give(param, free)
    settled = {*chosen, *unclear}
    targets = [p for p in params if options_of(p) and _side(p) == "to" and p.name not in settled]
    named = _named_target(text, start) if targets else None
    unknown = {p.name: named for p in targets} if named is not None else {}
    return chosen, unclear, unknown
