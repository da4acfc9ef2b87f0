"""Identifiers in a prompt: what looks like one, which parameters take one, and who gets which.

An id-shaped token mixes letters and digits ("HW-001", "A4", "ORD-1001", "INV_2024_07") or is
a UUID. A quantity with its unit ("5kg", "3pm", "2nd", "24-hour"), a date, a time or a version
("v1.2") is not one. A string parameter takes such a token with no cue word when its name or
description says it holds an identifier ("sku", "order_id", "ticket number", "Stock keeping
unit, e.g. HW-001"), or its previous value in the session was one; its JSON Schema `pattern`
and length bounds, when given, must accept the token. Without that shape, a token still fills
an identifier parameter right after a cue word from its name ("order 1001"), and an all-caps
code of five letters or more, or joined by "-"/"_" ("LANTERN", "SOCKS-WOOL"), one whose name
says it is an id ("product_id").

Every id-shaped token is *held* whether or not a parameter takes it: its digits are no
number ("check HW-001" sets no delay of 1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolmesh.router.extraction import values as v
from toolmesh.router.extraction.intervals import Intervals
from toolmesh.router.search.text import STOPWORDS, words

if TYPE_CHECKING:
    from toolmesh.router.extraction.extract import Param, _Text

# A token starts and ends with a letter or digit and is not glued to a longer stretch by
# ".", ":", "/", "@" ("v1.2", "3:30pm", "a/b2", "x@y2.co" are not tokens, or not whole ones).
_TOKEN = re.compile(r"(?<![\w:./@#+-])#?([^\W_](?:[\w-]*[^\W_])?)(?![\w@]|[-:/.+]\w)")
_UUID = re.compile(r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", re.I)
_QUANTITY = re.compile(r"\d+-?([^\W\d_]+)")  # "5kg", "24-hour", "2nd", "12B" (a seat: not a quantity)
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}")
_SCIENTIFIC = re.compile(r"\d+e[-+]?\d+", re.I)
_DIMENSIONS = re.compile(r"\d+x\d+", re.I)  # "1920x1080", "3x4": sizes and products, not ids
_SUFFIXES = words("am pm st nd rd th x k")
# What the cue-based reading has always accepted after a cue word: "order 1001", "ticket #42".
_CUED = re.compile(r"#?([A-Za-z]*[-_]?\d[\w-]*)")
# An all-caps code in a prompt that is not shouted: "LANTERN", "SOCKS-WOOL".
_CODE = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)*(?![\w-])")
_CODE_MIN = 5  # shorter all-caps words are mostly acronyms: "USA", "ASAP"

# Names that can only hold an identifier: they alone take an all-caps code ("product_id").
_ID_NAMES = words("id ids sku skus uuid guid identifier ref reference serial slug")
_ID_WORDS = words("id ids sku skus uuid guid identifier ref reference slug serial tracking key code")
# Name words that say "identifier" but are no cue before a value ("id 42" is rarely written).
_GENERIC = words("id ids code number no num key ref reference identifier uuid guid")
_RECORD_NUMBER = re.compile(
    r"\b(?:order|ticket|invoice|account|case|booking|reservation|confirmation|tracking|serial|part|"
    r"item|model|policy|claim|customer|employee|issue|bug|shipment|batch|lot|receipt|transaction|"
    r"product|article|record|user|member|stock keeping)\s+(?:number|no|num|code|key|unit)\b"
)
_OLD_CUE_WORDS = {"id", "code", "number", "sku", "ref", "reference"}
_FROM_WORDS = words("origin source from departure start old")
_TO_WORDS = words("destination to arrival end target new")

# Score tiers: an id-shaped token fits an identifier parameter on its own; a cue word before it
# settles which parameter; a token of another shape needs a cue.
_SHAPED, _CUE, _SAME_SHAPE, _SIDE, _CUED_ONLY, _CAPS = 1.0, 2.0, 1.0, 1.0, 0.5, 0.25


@dataclass(frozen=True, slots=True)
class Token:
    start: int
    end: int
    text: str
    #: "shaped" (letters and digits, or a UUID), "cued" (needs a cue word) or "code" (all caps).
    kind: str


def shaped(token: str) -> bool:
    """Whether `token` looks like an identifier: a UUID, or letters mixed with digits that are
    not a quantity, a date or a number in scientific notation."""
    if _UUID.fullmatch(token):
        return True
    if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        return False
    quantity = _QUANTITY.fullmatch(token)
    if quantity is not None:
        suffix = quantity.group(1)
        # "5kg", "3pm", "2nd" are quantities; "12B", "4C" (a seat, a flat) are not.
        if suffix.islower() or suffix.lower() in v.UNITS or suffix.lower() in _SUFFIXES:
            return False
    return not (_DATE.match(token) or _SCIENTIFIC.fullmatch(token) or _DIMENSIONS.fullmatch(token))


def shape(token: str) -> str:
    """Letters as "A", digits as "9", runs collapsed: "HW-001" and "GR-1" are both "A-9"."""
    masked = re.sub(r"[^\W\d_]+", "A", re.sub(r"\d+", "9", token))
    return masked.upper()


def tokens(text: str) -> list[Token]:
    """The id-shaped tokens of `text`, in order."""
    return [
        Token(m.start(), m.end(), m.group(1), "shaped") for m in _TOKEN.finditer(text) if shaped(m.group(1))
    ]


@dataclass(frozen=True, slots=True)
class _Taker:
    """A string parameter that may take an identifier, and what tells it one."""

    param: Param
    #: Whether it takes an id-shaped token with no cue word before it.
    fits: bool
    #: Whether its name says identifier outright, so an all-caps code fits it too.
    named: bool
    cues: frozenset[str]
    shapes: frozenset[str]

    def accepts(self, token: str) -> bool:
        schema = self.param.schema
        shortest, longest = schema.get("minLength"), schema.get("maxLength")
        if (isinstance(shortest, int) and len(token) < shortest) or (
            isinstance(longest, int) and len(token) > longest
        ):
            return False
        pattern = schema.get("pattern")
        if not isinstance(pattern, str):
            return True
        try:
            return re.search(pattern, token) is not None
        except re.error:
            return True  # a pattern Python cannot read does not stop the value; validation will


def _taker(param: Param, previous: Any) -> _Taker | None:
    if param.type != "string" or param.schema.get("format") in ("date", "date-time", "time", "email", "uri"):
        return None
    description = str(param.schema.get("description") or "")
    head = set(re.findall(r"[a-z]+", description.lower())[:4])
    examples = {shape(t.text) for t in tokens(description)}
    if isinstance(previous, str) and (shaped(previous) or _CODE.fullmatch(previous)):
        examples.add(shape(previous))
    name = param.tokens
    fits = bool(
        (name | head) & _ID_WORDS
        or _RECORD_NUMBER.search(param.about)
        or examples
        or param.schema.get("format") == "uuid"
        or _pattern_only(param)
    )
    if not fits and not name & _OLD_CUE_WORDS:
        return None
    cues = {w for w in name if w not in _GENERIC and w not in STOPWORDS}
    named = bool(name & _ID_NAMES)
    return _Taker(param, fits, named, frozenset(cues | {c.rstrip("s") for c in cues}), frozenset(examples))


def _pattern_only(param: Param) -> bool:
    """A `pattern` that refuses a plain word says the value is a code of some shape."""
    pattern = param.schema.get("pattern")
    if not isinstance(pattern, str):
        return False
    try:
        return re.search(pattern, "item") is None and re.search(pattern, "some words") is None
    except re.error:
        return False


def _candidates(text: _Text) -> list[Token]:
    found = {t.start: t for t in tokens(text.text)}
    spans = Intervals()
    for token in found.values():
        spans.add(token.start, token.end)
    for m in _CUED.finditer(text.text):
        if not spans.overlaps(m.start(), m.start() + 1):
            found.setdefault(m.start(), Token(m.start(), m.end(), m.group(1), "cued"))
    if re.search(r"[a-z]", text.text):
        for m in _CODE.finditer(text.text):
            size_ok = len(m.group(0)) >= _CODE_MIN or re.search(r"[-_]", m.group(0))
            if size_ok and not any(c.isdigit() for c in m.group(0)):
                found.setdefault(m.start(), Token(m.start(), m.end(), m.group(0), "code"))
    return sorted((t for t in found.values() if text.free(t.start, t.end)), key=lambda t: t.start)


def _score(taker: _Taker, token: Token, text: _Text) -> float:
    before = text.before(token.start, 3)
    cued = bool(taker.cues & (before | {w.rstrip("s") for w in before}))
    if token.kind == "code" and not taker.named:
        return 0.0
    if token.kind == "cued" or not taker.fits:
        # The reading identifiers always had: after a cue word, or anywhere for a parameter
        # whose name is only "id" / "code" / "number".
        return _CUE + (_SHAPED if token.kind == "shaped" else _CUED_ONLY) if cued or not taker.cues else 0.0
    score = (_SHAPED if token.kind == "shaped" else _CAPS) + (_CUE if cued else 0.0)
    if shape(token.text) in taker.shapes:
        score += _SAME_SHAPE
    side = text.before(token.start, 1)
    name = taker.param.tokens
    if ("from" in side and name & _FROM_WORDS) or ("to" in side and name & _TO_WORDS):
        score += _SIDE
    return score


def assign(params: list[Param], text: _Text, previous: Mapping[str, Any] | None) -> dict[str, str]:
    """Identifiers for the parameters that take one: the best-cued pairs first, then in order
    (the first such parameter takes the first token), one token per parameter and one parameter
    per token. The tokens given are taken from `text`; every id-shaped token is held from numbers."""
    for token in tokens(text.text):
        text.hold(token.start, token.end)
    takers = [t for p in params if (t := _taker(p, (previous or {}).get(p.name))) is not None]
    if not takers:
        return {}
    found = _candidates(text)
    pairs = sorted(
        (
            (score, i, token.start, taker, token)
            for i, taker in enumerate(takers)
            for token in found
            if (score := _score(taker, token, text)) > 0 and taker.accepts(token.text)
        ),
        key=lambda pair: (-pair[0], pair[1], pair[2]),
    )
    chosen: dict[str, str] = {}
    used: set[int] = set()
    for _, _, start, taker, token in pairs:
        if taker.param.name in chosen or start in used:
            continue
        chosen[taker.param.name] = token.text
        used.add(start)
        text.take(token.start, token.end)
    return chosen
