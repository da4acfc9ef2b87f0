"""Extraction that asks instead of guessing: from/to pairs, units, currencies, dates, numbers.

Each case is a prompt a user wrote and what it does or does not say. A value is either
read from a mention (never two slots from one mention), or left out and named as
missing or unclear; a default never stands in for something the prompt stated.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from toolmesh.router.extraction.extract import extract_arguments

UNITS = ["celsius", "fahrenheit", "kelvin"]
TEMPERATURE = {
    "type": "object",
    "properties": {
        "value": {"type": "number", "description": "The temperature to convert"},
        "from_unit": {"type": "string", "enum": UNITS, "description": "Unit of the given value"},
        "to_unit": {
            "type": "string",
            "enum": UNITS,
            "default": "celsius",
            "description": "Unit to convert to",
        },
    },
    "required": ["value", "from_unit"],
}
CODES = ["USD", "EUR", "GBP", "JPY"]
CURRENCY = {
    "type": "object",
    "properties": {
        "amount": {"type": "number"},
        "from_currency": {"type": "string", "enum": CODES},
        "to_currency": {"type": "string", "enum": CODES},
    },
    "required": ["amount", "from_currency", "to_currency"],
}
PAIR = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
STAY = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "check_in": {"type": "string", "format": "date"},
        "check_out": {"type": "string", "format": "date"},
    },
    "required": ["city", "check_in", "check_out"],
}
COUNTDOWN = {
    "type": "object",
    "properties": {
        "start": {"type": "integer", "default": 5},
        "interval": {"type": "number", "default": 1.0},
    },
}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
}


@pytest.mark.parametrize(
    ("schema", "prompt", "arguments", "missing"),
    [
        # The case: two units, one on each side of "to".
        (
            TEMPERATURE,
            "convert 98.6 fahrenheit to celsius",
            {"value": 98.6, "from_unit": "fahrenheit", "to_unit": "celsius"},
            [],
        ),
        (
            TEMPERATURE,
            "convert 98.6 F to C",
            {"value": 98.6, "from_unit": "fahrenheit", "to_unit": "celsius"},
            [],
        ),
        (
            TEMPERATURE,
            "what is 30 celsius in fahrenheit",
            {"value": 30, "from_unit": "celsius", "to_unit": "fahrenheit"},
            [],
        ),
        (
            TEMPERATURE,
            "98.6°F in C please",
            {"value": 98.6, "from_unit": "fahrenheit", "to_unit": "celsius"},
            [],
        ),
        # Only the target is said: the source is asked for, not copied from the target.
        (TEMPERATURE, "convert 20 to kelvin", {"value": 20, "to_unit": "kelvin"}, ["from_unit"]),
        (
            TEMPERATURE,
            "convert 100 degrees to fahrenheit",
            {"value": 100, "to_unit": "fahrenheit"},
            ["from_unit"],
        ),
        (TEMPERATURE, "convert the temperature", {"to_unit": "celsius"}, ["value", "from_unit"]),
        (
            CURRENCY,
            "convert 100 usd to eur",
            {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
            [],
        ),
        (
            CURRENCY,
            "how much is 250 GBP in JPY",
            {"amount": 250, "from_currency": "GBP", "to_currency": "JPY"},
            [],
        ),
        (CURRENCY, "convert 100 to EUR", {"amount": 100, "to_currency": "EUR"}, ["from_currency"]),
        # "dollars" alone are US dollars (currencies.py); where to is not said.
        (CURRENCY, "convert 100 dollars", {"amount": 100, "from_currency": "USD"}, ["to_currency"]),
        # Both operands are stated: neither comes from a default or from the other's number.
        (PAIR, "add 2 and 3", {"a": 2, "b": 3}, []),
        (PAIR, "subtract 7 from 19", {"a": 19, "b": 7}, []),
        (PAIR, "add 5", {"a": 5}, ["b"]),
        (
            STAY,
            "book a hotel in Rome from 2026-12-01 to 2026-12-04",
            {"city": "Rome", "check_in": "2026-12-01", "check_out": "2026-12-04"},
            [],
        ),
        (
            STAY,
            "book a hotel in Rome on December 1",
            {"city": "Rome", "check_in": "2026-12-01"},
            ["check_out"],
        ),
        # A stated number beats a default; one that could be either of two options is asked about.
        (COUNTDOWN, "count down from 8", {"start": 8, "interval": 1.0}, []),
        (COUNTDOWN, "countdown 8", {}, ["start", "interval"]),
        (COUNTDOWN, "start a countdown", {"start": 5, "interval": 1.0}, []),
        (WEATHER, "weather in Oslo in celsius or fahrenheit", {"city": "Oslo"}, ["unit"]),
        (WEATHER, "weather in Oslo in fahrenheit", {"city": "Oslo", "unit": "fahrenheit"}, []),
    ],
)
def test_values_come_from_the_prompt_or_are_asked_for(
    schema: dict[str, Any], prompt: str, arguments: dict[str, Any], missing: list[str]
) -> None:
    found = extract_arguments(prompt, schema, today=dt.date(2026, 11, 23))
    assert found.arguments == arguments
    assert found.missing == missing


def test_one_mention_fills_one_slot() -> None:
    found = extract_arguments("convert 98.6 fahrenheit", TEMPERATURE)
    assert found.arguments == {"value": 98.6, "from_unit": "fahrenheit", "to_unit": "celsius"}
    assert found.sources["to_unit"] == "default"  # the default, not the one mention read twice
    both = extract_arguments("convert 50 fahrenheit", CURRENCY | {"properties": TEMPERATURE["properties"]})
    assert list(both.arguments.values()).count("fahrenheit") == 1


@pytest.mark.parametrize(
    ("schema", "prompt", "arguments", "unknown"),
    [
        (
            TEMPERATURE,
            "convert 100 fahrenheit to rankine",
            {"value": 100, "from_unit": "fahrenheit"},
            "rankine",
        ),
        (TEMPERATURE, "what is 50 F in rankine?", {"value": 50, "from_unit": "fahrenheit"}, "rankine"),
        (TEMPERATURE, "convert 100 usd to eur", {"value": 100}, "eur"),
        (CURRENCY, "convert 100 dollars to bitcoin", {"amount": 100, "from_currency": "USD"}, "bitcoin"),
    ],
)
def test_a_target_that_is_not_an_option_is_asked_for(
    schema: dict[str, Any], prompt: str, arguments: dict[str, Any], unknown: str
) -> None:
    """The prompt names where to convert to, and it is none of the options: the default
    target would contradict it, so the target is asked for, naming what the prompt said."""
    found = extract_arguments(prompt, schema)
    assert found.arguments == arguments
    target = "to_unit" if schema is TEMPERATURE else "to_currency"
    assert target in found.missing and found.unknown == {target: unknown}


@pytest.mark.parametrize(
    ("prompt", "to_unit"),
    [
        ("convert 100 fahrenheit", "celsius"),  # no target named: the default
        ("convert 100 fahrenheit to see if it is hot", "celsius"),  # "to see": not a target
        ("I'd like to turn 100 fahrenheit around", "celsius"),  # before the value: not a target
        ("convert 100 fahrenheit to degrees kelvin", "kelvin"),
        ("what is 100 F in centigrade", "celsius"),  # another name of an option
        ("Convert 100 Fahrenheit To Celsius", "celsius"),
    ],
)
def test_targets_the_options_have_are_read_and_silence_keeps_the_default(prompt: str, to_unit: str) -> None:
    found = extract_arguments(prompt, TEMPERATURE)
    assert found.arguments == {"value": 100, "from_unit": "fahrenheit", "to_unit": to_unit}
    assert found.missing == [] and found.unknown == {}
