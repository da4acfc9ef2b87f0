"""Deterministic argument extraction driven by a function's JSON schema.

Each parameter is read according to what its schema says it is: enums by
(fuzzy) name, booleans from "with/without/no/enable..." cues, numbers with
their units (converted when the parameter names another unit of the same
kind; a signed change takes the sign of "cheaper", "raise"...: directions.py),
URLs, emails, dates and times (ISO and natural), places from "in/for/to <Place>",
identifiers by their shape or after a cue ("HW-001", "order 1001": identifiers.py),
quoted strings, and free text after a cue ("saying ...", "search for ...", ":").
What the prompt does not say comes from the previous call of the same function in
the session, then from the schema's default: a value the prompt gives always wins.
Values are found left to right in one pass over the text, and each stretch of text
is used once.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolmesh.router.extraction import choices, directions, identifiers
from toolmesh.router.extraction import values as v
from toolmesh.router.extraction.dates import find_dates, find_times
from toolmesh.router.extraction.intervals import Intervals
from toolmesh.router.search.text import STOPWORDS, split_identifier, words

_LETTERS = re.compile(r"[a-z]+")
_NEGATIONS = words("no not without don't dont disable disabled exclude excluding off never skip hide")
_AFFIRM = re.compile(r"\b(true|yes|on|enabled?)\b", re.I)
_DENY = re.compile(r"\b(false|no|off|disabled?)\b", re.I)
_TEXT_CUES = re.compile(
    r"(?::\s*|\b(?:saying|says|that says|with the text|with text|about|search for|look up|find|"
    r"calculate|compute|evaluate|summari[sz]e|translate|what is|what's)\s+)",
    re.I,
)
_GENERIC_WORDS = words("is has include enable show use with flag should do get")
_PLACE_WORDS = words("city location place country destination address town region where state origin source")
_TEXT_WORDS = words(
    "text query q message content expression question prompt body search keyword keywords topic term"
)
_EMAIL_HINTS = {"email", "mail"}
_URL_HINTS = {"url", "link", "website", "uri", "href"}
_FROM_WORDS = words("origin source from departure start")
_TO_WORDS = words("destination to arrival end target")


@dataclass
class Extraction:
    """The arguments found, where each came from, and the required ones still missing.
    `unclear` names enum parameters the prompt gives two or more choices for without
    saying which, `unknown` targets it names with a word none of their options matches
    (parameter -> that word): both are left out (no default either), and count as missing."""

    arguments: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unclear: list[str] = field(default_factory=list)
    unknown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    schema: Mapping[str, Any]
    required: bool

    @property
    def tokens(self) -> set[str]:
        return set(split_identifier(self.name).split())

    @property
    def about(self) -> str:
        return f"{split_identifier(self.name)} {self.schema.get('description') or ''}".lower()

    @property
    def about_words(self) -> set[str]:
        return set(re.findall(r"[a-z]+", self.about))

    def wants(self, formats: tuple[str, ...], hints: set[str]) -> bool:
        """Whether the schema's format, the name, or the head of the description ("Recipient
        email address", not "Subject line of the email") asks for this kind of value."""
        head = re.findall(r"[a-z]+", str(self.schema.get("description") or "").lower())[:3]
        return self.schema.get("format") in formats or bool((self.tokens | set(head)) & hints)

    @property
    def type(self) -> str:
        kind = self.schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        return str(kind or ("string" if "enum" not in self.schema else "enum"))


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a local $ref and unwrap Optional (anyOf with null), keeping the outer description/default."""
    outer = dict(schema)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        outer = {**target, **{k: val for k, val in schema.items() if k != "$ref"}}
    for key in ("anyOf", "oneOf"):
        branches = [b for b in outer.get(key, ()) if isinstance(b, Mapping) and b.get("type") != "null"]
        if len(branches) == 1:
            inner = _resolve(branches[0], root)
            outer = {**inner, **{k: val for k, val in outer.items() if k != key}}
    return outer


def parameters(schema: Mapping[str, Any]) -> list[Param]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = set(schema.get("required") or ())
    return [
        Param(str(name), _resolve(sub, schema), name in required)
        for name, sub in properties.items()
        if isinstance(sub, Mapping)
    ]


class _Text:
    """The prompt, its words, and the stretches of it already used by some parameter.

    The words are found once: reading the words before or after a position is then a
    binary search, not a scan of the prompt (which, per number and parameter, made
    extraction quadratic in the prompt's length).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.used = Intervals()
        #: Stretches no number may be read from (an identifier's digits), though other readers may.
        self.held = Intervals()
        self.lower = text.lower()
        # Positions in `text` map to positions in `lower`; they differ only after a character
        # whose lowercase is longer ("İ" -> "i̇"). Offsets are kept only then.
        self._offsets: list[int] | None = None
        if len(self.lower) != len(text):
            self._offsets = [0, *itertools.accumulate(len(c.lower()) for c in text)]
        found = [(m.start(), m.end()) for m in _LETTERS.finditer(self.lower)]
        self._starts = [a for a, _ in found]
        self._ends = [b for _, b in found]

    def free(self, start: int, end: int) -> bool:
        return not self.used.overlaps(start, end)

    def take(self, start: int, end: int) -> None:
        self.used.add(start, end)

    def hold(self, start: int, end: int) -> None:
        self.held.add(start, end)

    def _lower_at(self, position: int) -> int:
        position = max(0, min(position, len(self.text)))
        return position if self._offsets is None else self._offsets[position]

    def before(self, start: int, words: int = 4) -> set[str]:
        """The last `words` runs of letters in ``text[:start]``, lowercased (a word cut at
        `start` counts as what is left of it)."""
        cut = self._lower_at(start)
        stop = bisect.bisect_left(self._starts, cut)
        first = max(0, stop - words)
        spans = zip(self._starts[first:stop], self._ends[first:stop], strict=True)
        return {self.lower[a : min(b, cut)] for a, b in spans}

    def after(self, end: int, words: int = 2) -> list[str]:
        """The first `words` runs of letters in ``text[end:]``, lowercased."""
        cut = self._lower_at(end)
        first = bisect.bisect_right(self._ends, cut)
        spans = zip(self._starts[first : first + words], self._ends[first : first + words], strict=True)
        return [self.lower[max(a, cut) : b] for a, b in spans]


def _target_unit(param: Param) -> str:
    for word in re.findall(r"[a-z]+", param.about):
        if word in v.UNITS and len(word) > 2:
            return str(word)
    return ""


def _fold(words: Iterable[str]) -> set[str]:
    return {w.rstrip("s") for w in words if w not in STOPWORDS}


@dataclass(frozen=True, slots=True)
class _NumberCues:
    """What `_cue_score` reads about a numeric parameter, worked out once per parameter
    (not once per number in the prompt)."""

    param: Param
    words: set[str]
    target: str
    percent: bool

    @classmethod
    def of(cls, param: Param) -> _NumberCues:
        percent = bool({"percent", "percentage", "rate"} & param.about_words)
        return cls(param, _fold(param.tokens), _target_unit(param), percent)


def _context(text: _Text, number: v.Number) -> tuple[set[str], set[str]]:
    """The words just before a number, and just after it with its unit."""
    # "from" and "to" are stopwords, but right before a number they say which end it is.
    side = text.before(number.start, 1) & {"from", "to"}
    return _fold(text.before(number.start)) | side, _fold(text.after(number.end, 2)) | _fold([number.unit])


def _cue_score(cues: _NumberCues, context: tuple[set[str], set[str]], number: v.Number) -> float:
    """How strongly the words around a number point at this parameter: its name just
    before the number counts double ("height of 5"), just after it once ("5 days")."""
    before, after = context
    score = 2.0 * len(cues.words & before) + len(cues.words & after)
    # "from 8" fits a start or source, "to 20" an end or target.
    if "from" in before and cues.param.tokens & _FROM_WORDS:
        score += 1
    if "to" in before and cues.param.tokens & _TO_WORDS:
        score += 1
    target = cues.target
    if number.unit in v.UNITS and target:
        score += 1 if v.UNITS[number.unit][0] == v.UNITS[target][0] else -2
    if number.unit == "%" and cues.percent:
        score += 1
    return score


def _number_value(param: Param, number: v.Number, text: _Text) -> float | int | None:
    value = number.value
    target = _target_unit(param)
    if number.unit and target:
        converted = number.convert(target)
        if converted is not None:
            value = converted
    if abs(value - round(value)) < 1e-9:
        value = round(value)  # JSON numbers accept integers, and 5 reads better than 5.0
    elif param.type == "integer":
        return None
    return directions.signed(param, number, text, value)


def _assign_numbers(params: list[Param], text: _Text, out: Extraction) -> None:
    found = [
        n
        for n in v.numbers(text.text)
        if text.free(n.start, n.end) and not text.held.overlaps(n.start, n.end)
    ]
    numeric = [p for p in params if p.type in ("integer", "number") and p.name not in out.arguments]
    cues = [_NumberCues.of(p) for p in numeric]
    contexts = [_context(text, n) for n in found] if numeric else []
    scored = (
        (_cue_score(c, contexts[j], n), -i, -j, c.param, n)
        for i, c in enumerate(cues)
        for j, n in enumerate(found)
    )
    # Only pairs with a cue can be chosen, and a prompt full of numbers has few: sorting them
    # alone keeps the sort (one long hold of the GIL) small.
    pairs = sorted((pair for pair in scored if pair[0] > 0), key=lambda t: t[:3], reverse=True)
    used: set[int] = set()
    for _, _, _, param, number in pairs:
        if param.name in out.arguments or number.start in used:
            continue
        value = _number_value(param, number, text)
        if value is not None:
            out.arguments[param.name], out.sources[param.name] = value, "number"
            used.add(number.start)
            text.take(number.start, number.end)
    # Numbers nobody's name claimed go, in order, to required numeric parameters, or to
    # the one optional numeric parameter left ("order 2 tents": quantity).
    rest = [n for n in found if n.start not in used and text.free(n.start, n.end)]
    open_params = [p for p in numeric if p.name not in out.arguments]
    takers = [p for p in open_params if p.required] or (open_params if len(open_params) == 1 else [])
    if rest and not takers and len(open_params) > 1:
        # A number is stated, and several optional parameters could take it: which one is
        # a guess, and their defaults would drop the number. Ask instead.
        out.unclear += [p.name for p in open_params]
        return
    if len(rest) == 2 and "from" in text.before(rest[1].start, 1) and len(takers) >= 2:
        rest.reverse()  # "subtract 7 from 19": the number after "from" is the first operand
    waiting = iter(rest)
    for param in takers:
        for number in waiting:
            value = _number_value(param, number, text)
            if value is not None:
                out.arguments[param.name], out.sources[param.name] = value, "number"
                text.take(number.start, number.end)
                break


def _boolean(param: Param, text: _Text) -> bool | None:
    lowered = text.lower
    cues = [w for w in param.tokens if w not in _GENERIC_WORDS and w not in STOPWORDS]
    for cue in cues:
        for m in re.finditer(rf"\b{re.escape(cue)}", lowered):
            tail = lowered[m.end() : m.end() + 12]
            if _DENY.match(tail.lstrip(" :=")):
                return False
            if _AFFIRM.match(tail.lstrip(" :=")):
                return True
            return not (text.before(m.start(), 3) & _NEGATIONS)
    return None


def _date_value(param: Param, text: _Text, today: dt.date) -> str | None:
    wants_time = param.schema.get("format") == "date-time" or "time" in param.tokens
    for found in find_dates(text.text, today):
        if not text.free(found.start, found.end) or found.date is None:
            continue
        text.take(found.start, found.end)
        clock = found.time
        if clock is None and wants_time:
            times = [t for t in find_times(text.text) if text.free(t.start, t.end)]
            if times:
                clock = times[0].time
                text.take(times[0].start, times[0].end)
        if wants_time and clock is not None:
            return dt.datetime.combine(found.date, clock).isoformat() + found.tz
        return found.date.isoformat()
    return None


def _time_value(text: _Text) -> str | None:
    for found in find_times(text.text):
        if text.free(found.start, found.end) and found.time is not None:
            text.take(found.start, found.end)
            return found.time.strftime("%H:%M")
    return None


def _place(param: Param, text: _Text) -> str | None:
    found = [(prep, span) for prep, span in v.places(text.text) if text.free(span.start, span.end)]
    if param.tokens & _FROM_WORDS:
        preferred = ["from"]
    elif param.tokens & _TO_WORDS:
        preferred = ["to"]
    else:
        preferred = ["in", "for", "at", "near", "around", "of", "to", "from"]
    for prep in preferred:
        for p, span in found:
            if p == prep:
                text.take(span.start, span.end)
                return span.text
    return None


def _free_text(text: _Text) -> str | None:
    for m in _TEXT_CUES.finditer(text.text):
        # Whether the rest is free is cheap to ask; the rest itself is not. Once it is free,
        # so is every later rest, and each is a part of this one: if this one is empty, so are they.
        if not text.free(m.end(), len(text.text)):
            continue
        rest = text.text[m.end() :].strip().rstrip("?!.").strip()
        if rest:
            text.take(m.end(), len(text.text))
        return rest or None
    return None


def _string(param: Param, text: _Text, quotes: list[v.Span], today: dt.date) -> str | None:
    fmt = str(param.schema.get("format") or "")
    tokens = param.tokens
    for find, formats, hints in ((v.emails, ("email",), _EMAIL_HINTS), (v.urls, ("uri", "url"), _URL_HINTS)):
        if param.wants(formats, hints):
            found = _first(find(text.text), text)
            if found is not None:
                return found
    if fmt in ("date", "date-time") or tokens & {"date", "day", "when", "datetime", "deadline"}:
        return _date_value(param, text, today)
    if fmt == "time" or "time" in tokens:
        return _time_value(text)
    quoted = _first(quotes, text)
    if quoted is not None:
        return quoted
    if tokens & _PLACE_WORDS:
        return _place(param, text)
    if tokens & _TEXT_WORDS:
        return _free_text(text)
    return None


def _first(found: list[v.Span], text: _Text) -> str | None:
    for span in found:
        if text.free(span.start, span.end):
            text.take(span.start, span.end)
            return span.text
    return None


def extract_arguments(
    prompt: str,
    schema: Mapping[str, Any],
    *,
    today: dt.date | None = None,
    previous: Mapping[str, Any] | None = None,
) -> Extraction:
    """Arguments for a function with this input `schema` from `prompt`.

    `previous` holds the arguments of the last call of the same function in the
    session: they fill what the prompt leaves out ("now do the same for Paris").
    """
    today = today or dt.date.today()
    text = _Text(prompt)
    out = Extraction()
    params = parameters(schema)
    # URLs and emails no parameter wants are set aside, so their digits and words are
    # not read as anything else.
    for find, formats, hints in ((v.urls, ("uri", "url"), _URL_HINTS), (v.emails, ("email",), _EMAIL_HINTS)):
        if not any(p.wants(formats, hints) for p in params):
            for span in find(prompt):
                text.take(span.start, span.end)
    quotes = v.spans(v.QUOTED, prompt)

    chosen, out.unclear, out.unknown = choices.choose(params, text)
    for name, value in chosen.items():
        out.arguments[name], out.sources[name] = value, "enum"
    # Before the other strings: an identifier is not a place ("and for GR-001?") or a quote.
    open_params = [p for p in params if p.name not in out.arguments and not choices.options_of(p)]
    for name, value in identifiers.assign(open_params, text, previous).items():
        out.arguments[name], out.sources[name] = value, "identifier"
    readers: list[tuple[Callable[[Param], bool], Callable[[Param], Any]]] = [
        (lambda p: p.type == "boolean", lambda p: _boolean(p, text)),
        (lambda p: p.type == "string", lambda p: _string(p, text, quotes, today)),
    ]
    for accepts, read in readers:
        for param in params:
            if param.name in out.arguments or choices.options_of(param) or not accepts(param):
                continue
            value = read(param)
            if value is not None:
                out.arguments[param.name], out.sources[param.name] = value, param.type
    _assign_numbers(params, text, out)

    for param in params:
        if param.name in out.arguments:
            continue
        if param.name in out.unclear or param.name in out.unknown:
            out.missing.append(param.name)
        elif previous is not None and param.name in previous:
            out.arguments[param.name], out.sources[param.name] = previous[param.name], "previous"
        elif "default" in param.schema:
            out.arguments[param.name], out.sources[param.name] = param.schema["default"], "default"
        elif param.required:
            out.missing.append(param.name)
    return out
