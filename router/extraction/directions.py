"""Which way a change goes: "10% cheaper" is -10 for a parameter that holds a signed change.

A parameter holds a signed change when its schema allows negatives explicitly (a negative
`minimum`), or its name or description says change, delta, adjust, offset, shift or
"negative ..." ("Percentage change of the price: positive raises it, negative lowers it").
One that cannot be negative (`minimum` >= 0, "non-negative") never is. A number written
with its sign keeps it; otherwise the direction word nearest to it decides ("cut ... by",
"discount", "lower" against "raise", "markup", "up by"), skipping negated ones ("not raise");
a number after "to" or "at" is where the value ends up, not a change, and keeps its sign.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from toolmesh.router.extraction import values as v
from toolmesh.router.search.text import words

if TYPE_CHECKING:
    from toolmesh.router.extraction.extract import Param, _Text

_DECREASE = (
    r"cheap(?:er|en\w*)|discount\w*|reduc\w*|lower\w*|minus|decreas\w*|cut\w*|drop\w*|less|down|"
    r"markdowns?|slash\w*|deduct\w*|subtract\w*|off|shrink\w*|fall\w*|negative"
)
_INCREASE = (
    r"rais\w*|increas\w*|pricier|dearer|up|markups?|higher|hike\w*|boost\w*|plus|more|grow\w*|positive"
)
_DIRECTION = re.compile(rf"\b(?:(?P<down>{_DECREASE})|(?P<up>{_INCREASE}))\b", re.I)
_TARGETS = words("to at")
_NOT = words("not no never don dont without")
_CHANGE_WORDS = words("change delta adjust adjustment offset shift difference diff signed negative")
_NEVER_NEGATIVE = re.compile(r"non-?\s?negative|must be positive|positive (?:number|integer|value)")
_SIGN = re.compile(r"[$€£¥]?\s?[-+\u2212]")


def signed_change(param: Param) -> bool:
    """Whether this numeric parameter holds a change that may go either way."""
    if param.type not in ("integer", "number"):
        return False
    lows = [
        float(low)
        for key in ("minimum", "exclusiveMinimum")
        if isinstance(low := param.schema.get(key), int | float) and not isinstance(low, bool)
    ]
    if lows:
        return min(lows) < 0 and max(lows) < 0
    if _NEVER_NEGATIVE.search(param.about):
        return False
    return bool(param.about_words & _CHANGE_WORDS)


def _explicit_sign(number: v.Number, text: _Text) -> bool:
    before = text.text[number.start - 1 : number.start] if number.start else ""
    return bool(_SIGN.match(text.text, number.start, number.end)) or before in ("-", "+", "\u2212")


def direction(number: v.Number, text: _Text) -> int:
    """-1 when the direction word nearest to `number` says decrease, +1 when it says increase
    or there is none."""
    best: tuple[int, int] | None = None
    for m in _DIRECTION.finditer(text.text):
        taken = not text.free(m.start(), m.end()) or text.held.overlaps(m.start(), m.end())
        if taken or text.before(m.start(), 2) & _NOT:
            continue
        distance = number.start - m.end() if m.end() <= number.start else m.start() - number.end
        sign = -1 if m.group("down") else 1
        if best is None or distance < best[0]:
            best = (distance, sign)
    return 1 if best is None else best[1]


def signed(param: Param, number: v.Number, text: _Text, value: float | int) -> float | int:
    """`value` (read from `number`) with the sign the prompt's words give it, for a parameter
    holding a signed change; unchanged otherwise."""
    if value < 0 or not signed_change(param) or _explicit_sign(number, text):
        return value
    if text.before(number.start, 1) & _TARGETS:
        return value  # "lower it to 18": where it ends, not by how much
    return -value if direction(number, text) < 0 else value
