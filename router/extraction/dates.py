"""Dates and times in prompts: ISO forms and the common natural ones, resolved against "today".

Recognised: ``2024-03-15``, ``2024-03-15T09:30:00Z``, ``today``, ``tomorrow``,
``yesterday``, ``the day after tomorrow``, ``next/this/on Monday``, ``in 3 days``,
``in 2 weeks``, ``next week``, ``March 5``, ``5 March 2024``, ``Mar 5th, 2024``,
``the 20th of September``; times ``3pm``, ``10:30 am``, ``15:45``, ``noon``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from toolmesh.router.extraction.intervals import Intervals

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        1,
    )
    for name in names
}
_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"

_ISO = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?\b"
)
_RELATIVE_DAY = re.compile(
    r"\b(?:the\s+)?(day after tomorrow|day before yesterday|today|tonight|tomorrow|yesterday)\b", re.I
)
_IN_N = re.compile(r"\bin\s+(\d+|a|an|one|two|three|four|five|six|seven)\s+(day|week)s?\b", re.I)
_NEXT_WEEK = re.compile(r"\bnext\s+week\b", re.I)
_WEEKDAY_RE = re.compile(rf"\b(?:(next|this|on|coming)\s+)?({_WEEKDAY})\b\.?", re.I)
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+{_ORDINAL}\b(?:,?\s*(\d{{4}}))?", re.I)
_DAY_MONTH = re.compile(rf"\b(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s*(\d{{4}}))?", re.I)
_TIME = re.compile(
    r"\b(?:at\s+)?(?:(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\.?|(\d{1,2}):(\d{2})(?!\d)|(noon|midnight))\b", re.I
)
_SMALL = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


@dataclass(frozen=True, slots=True)
class Found:
    """A date or time found in a prompt, with where it was."""

    start: int
    end: int
    date: dt.date | None = None
    time: dt.time | None = None
    tz: str = ""


def _safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _upcoming(today: dt.date, month: int, day: int, year: str | None) -> dt.date | None:
    """A month and day without a year means the next such day from today."""
    if year:
        return _safe_date(int(year), month, day)
    found = _safe_date(today.year, month, day)
    if found is not None and found < today:
        found = _safe_date(today.year + 1, month, day)
    return found


def find_dates(text: str, today: dt.date) -> list[Found]:
    """Every date in `text`, in order; spans never overlap."""
    found: list[Found] = []
    taken = Intervals()  # not a scan of `found` per match: a prompt can hold thousands of dates

    def add(match: re.Match[str], value: dt.date | None, time: dt.time | None = None, tz: str = "") -> None:
        if value is None or taken.overlaps(match.start(), match.end()):
            return
        taken.add(match.start(), match.end())
        found.append(Found(match.start(), match.end(), value, time, tz))

    for m in _ISO.finditer(text):
        clock = None
        if m.group(4):
            clock = dt.time(int(m.group(4)), int(m.group(5)), int(m.group(6) or 0))
        add(m, _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3))), clock, m.group(7) or "")
    for m in _RELATIVE_DAY.finditer(text):
        offset = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1, "day after tomorrow": 2}.get(
            m.group(1).lower(), -2
        )
        add(m, today + dt.timedelta(days=offset))
    for m in _IN_N.finditer(text):
        count = _SMALL.get(m.group(1).lower()) or int(m.group(1))
        add(m, today + dt.timedelta(days=count * (7 if m.group(2).lower() == "week" else 1)))
    for m in _NEXT_WEEK.finditer(text):
        add(m, today + dt.timedelta(days=7 - today.weekday()))
    for m in _MONTH_DAY.finditer(text):
        add(m, _upcoming(today, _MONTHS[m.group(1).lower()], int(m.group(2)), m.group(3)))
    for m in _DAY_MONTH.finditer(text):
        add(m, _upcoming(today, _MONTHS[m.group(2).lower()], int(m.group(1)), m.group(3)))
    for m in _WEEKDAY_RE.finditer(text):
        ahead = (_WEEKDAYS[m.group(2).lower()] - today.weekday()) % 7
        if ahead == 0 and (m.group(1) or "").lower() == "next":
            ahead = 7
        add(m, today + dt.timedelta(days=ahead))
    found.sort(key=lambda f: f.start)
    return found


def find_times(text: str) -> list[Found]:
    """Clock times ("3pm", "10:30 am", "15:45", "noon"), in order."""
    found = []
    for m in _TIME.finditer(text):
        if m.group(6):
            clock = dt.time(12 if m.group(6).lower() == "noon" else 0, 0)
        elif m.group(3):
            hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "p" else 0)
            if int(m.group(1)) > 12:
                continue
            clock = dt.time(hour, int(m.group(2) or 0))
        else:
            hour, minute = int(m.group(4)), int(m.group(5))
            if hour > 23 or minute > 59:
                continue
            clock = dt.time(hour, minute)
        found.append(Found(m.start(), m.end(), time=clock))
    return found
