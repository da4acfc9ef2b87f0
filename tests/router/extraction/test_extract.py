"""Deterministic, schema-driven argument extraction: every kind of value it reads."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from toolmesh.router.extraction.dates import find_dates, find_times
from toolmesh.router.extraction.extract import extract_arguments

TODAY = dt.date(2026, 3, 10)  # a Tuesday


def schema(required: tuple[str, ...] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def extract(prompt: str, spec: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return extract_arguments(prompt, spec, today=TODAY, **kwargs).arguments


NUMBERS = schema(("base", "height"), base={"type": "number"}, height={"type": "number"})
TIMER = schema(("seconds",), seconds={"type": "integer", "description": "Duration in seconds."})
DISTANCE = schema(("km",), km={"type": "number", "description": "Distance in kilometers."})
RATE = schema(("rate",), rate={"type": "number", "description": "Interest rate in percent."})
UNIT = schema(
    ("city",), city={"type": "string"}, unit={"enum": ["celsius", "fahrenheit"], "default": "celsius"}
)
MODE = schema(mode={"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]}) | {
    "$defs": {"Mode": {"enum": ["fast_forward", "slow_motion"], "type": "string"}}
}
FLAG = schema(include_humidity={"type": "boolean", "default": False})
EMAIL = schema(
    ("to", "subject"),
    to={"type": "string", "description": "Recipient email address."},
    subject={"type": "string", "description": "Subject line of the email."},
)
LINK = schema(("url",), url={"type": "string", "format": "uri"})
FLIGHT = schema(
    ("origin", "destination", "date"),
    origin={"type": "string"},
    destination={"type": "string"},
    date={"type": "string", "format": "date"},
)
MEETING = schema(("start",), start={"type": "string", "format": "date-time"})
ALARM = schema(("time",), time={"type": "string", "description": "Clock time"})
ORDER = schema(("order_id",), order_id={"type": "string"})
SEARCH = schema(("query",), query={"type": "string"})


@pytest.mark.parametrize(
    ("prompt", "spec", "expected"),
    [
        ("triangle with a base of 10 units and height of 5 units", NUMBERS, {"base": 10, "height": 5}),
        ("triangle with height 4.5 and base 3", NUMBERS, {"base": 3, "height": 4.5}),
        ("area of a 1,200 by 30 rectangle", NUMBERS, {"base": 1200, "height": 30}),
        ("set a timer for 15 minutes", TIMER, {"seconds": 900}),
        ("ring in two hours", TIMER, {"seconds": 7200}),
        ("a 90 second countdown", TIMER, {"seconds": 90}),
        ("how long is a 10 mile run", DISTANCE, {"km": pytest.approx(16.09344)}),
        ("a loan at 4.5% interest", RATE, {"rate": 4.5}),
    ],
)
def test_numbers_with_units(prompt: str, spec: dict[str, Any], expected: dict[str, Any]) -> None:
    assert extract(prompt, spec) == expected


def test_integers_refuse_fractions() -> None:
    found = extract_arguments("a timer for 2.5 seconds", TIMER, today=TODAY)
    assert found.arguments == {} and found.missing == ["seconds"]


@pytest.mark.parametrize(
    ("prompt", "unit"),
    [
        ("weather in Oslo in fahrenheit", "fahrenheit"),
        ("Oslo, farenheit please", "fahrenheit"),
        ("Oslo", "celsius"),
    ],
)
def test_enums_by_fuzzy_name_or_default(prompt: str, unit: str) -> None:
    assert extract(prompt, UNIT)["unit"] == unit


def test_enums_behind_refs_and_optional() -> None:
    assert extract("play it in slow motion", MODE) == {"mode": "slow_motion"}


@pytest.mark.parametrize(
    ("prompt", "value"),
    [
        ("weather in Oslo with humidity", True),
        ("weather in Oslo without humidity", False),
        ("weather, include humidity: false", False),
        ("weather in Oslo", False),  # the default
    ],
)
def test_booleans(prompt: str, value: bool) -> None:
    assert extract(prompt, FLAG) == {"include_humidity": value}


def test_emails_and_quoted_strings() -> None:
    prompt = "email alice@example.com with subject 'Lunch moved to 1pm'"
    assert extract(prompt, EMAIL) == {"to": "alice@example.com", "subject": "Lunch moved to 1pm"}
    curly = "email bob@example.org: \u201cQuarterly report\u201d"
    assert extract(curly, EMAIL)["subject"] == "Quarterly report"


def test_urls() -> None:
    assert extract("fetch https://example.com/a/b.pdf?x=1, thanks", LINK) == {
        "url": "https://example.com/a/b.pdf?x=1"
    }


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("fly from London to New York on 2026-04-02", ("London", "New York", "2026-04-02")),
        ("I want to go to Tokyo from São Paulo tomorrow", ("São Paulo", "Tokyo", "2026-03-11")),
        ("flights from oslo to bergen on march 20th", ("oslo", "bergen", "2026-03-20")),
        ("from Rome to Paris next Monday", ("Rome", "Paris", "2026-03-16")),
        ("from Rome to Paris on the 2nd of February 2027", ("Rome", "Paris", "2027-02-02")),
        ("from Rome to Paris in 3 days", ("Rome", "Paris", "2026-03-13")),
    ],
)
def test_places_and_dates(prompt: str, expected: tuple[str, str, str]) -> None:
    found = extract(prompt, FLIGHT)
    assert (found["origin"], found["destination"], found["date"]) == expected


def test_date_times_and_times() -> None:
    assert extract("meet on Friday at 3:30 pm", MEETING) == {"start": "2026-03-13T15:30:00"}
    assert extract("meet at 2026-05-01T09:00:00Z", MEETING) == {"start": "2026-05-01T09:00:00Z"}
    assert extract("wake me at 6am", ALARM) == {"time": "06:00"}


def test_identifiers_and_free_text() -> None:
    assert extract("where is my order ORD-1001?", ORDER) == {"order_id": "ORD-1001"}
    assert extract("search for cheap flights to Rome", SEARCH) == {"query": "cheap flights to Rome"}
    assert extract("evaluate: (2 + 3) * 4", schema(("expression",), expression={"type": "string"})) == {
        "expression": "(2 + 3) * 4"
    }


def test_missing_required_arguments_are_named() -> None:
    found = extract_arguments("book a flight to Paris", FLIGHT, today=TODAY)
    assert found.arguments == {"destination": "Paris"} and found.missing == ["origin", "date"]


def test_previous_arguments_fill_what_the_prompt_leaves_out() -> None:
    previous = {"city": "Oslo", "unit": "fahrenheit"}
    found = extract_arguments("now do the same for Paris", UNIT, today=TODAY, previous=previous)
    assert found.arguments == {"city": "Paris", "unit": "fahrenheit"}
    assert found.sources == {"city": "string", "unit": "previous"}


def test_dates_found_in_order_without_overlaps() -> None:
    found = find_dates("today, then 2026-12-24, then the day after tomorrow and Dec 31", TODAY)
    assert [f.date.isoformat() for f in found if f.date] == [
        "2026-03-10",
        "2026-12-24",
        "2026-03-12",
        "2026-12-31",
    ]
    assert find_dates("on February 30", TODAY) == []
    assert [f.time.isoformat() for f in find_times("noon or 23:15 or 7 pm") if f.time] == [
        "12:00:00",
        "23:15:00",
        "19:00:00",
    ]
