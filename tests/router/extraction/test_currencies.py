"""Currencies by name and symbol, read as the codes a function takes (currencies.py)."""

from __future__ import annotations

from typing import Any

import pytest

from toolmesh.router.extraction.currencies import currency_mentions
from toolmesh.router.extraction.extract import extract_arguments

ENUM = {
    "type": "object",
    "properties": {
        "amount": {"type": "number"},
        "from_currency": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY", "CHF"]},
        "to_currency": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY", "CHF"]},
    },
    "required": ["amount", "from_currency", "to_currency"],
}
# No enum: the names and descriptions say currency, so the codes are the choices.
FREE = {
    "type": "object",
    "properties": {
        "amount": {"type": "number"},
        "source": {"type": "string", "description": "ISO code of the currency to convert from"},
        "target": {"type": "string", "description": "Currency to convert into"},
    },
    "required": ["amount", "source", "target"],
}


def _pair(schema: dict[str, Any], source: str | None, target: str | None) -> dict[str, Any]:
    names = ("from_currency", "to_currency") if schema is ENUM else ("source", "target")
    return {name: code for name, code in zip(names, (source, target), strict=True) if code is not None}


@pytest.mark.parametrize("schema", [ENUM, FREE], ids=["enum", "string"])
@pytest.mark.parametrize(
    ("prompt", "amount", "source", "target"),
    [
        ("convert 100 euros to dollars", 100, "EUR", "USD"),
        ("convert $100 to euros", 100, "USD", "EUR"),
        ("€50 in pounds sterling", 50, "EUR", "GBP"),
        ("convert 20 swiss francs to yen", 20, "CHF", "JPY"),
        ("how much is 250 GBP in JPY", 250, "GBP", "JPY"),
        ("change 30 quid into euros", 30, "GBP", "EUR"),
        # The amount's currency is the source, wherever the other one is said.
        ("how many yen is 100 dollars", 100, "USD", "JPY"),
        ("100 pounds to dollars", 100, "GBP", "USD"),
        # A name alone is its usual currency; the side not said is asked for.
        ("convert 100 dollars", 100, "USD", None),
        ("convert 100 to EUR", 100, None, "EUR"),
    ],
)
def test_currency_names_and_symbols_become_codes(
    schema: dict[str, Any], prompt: str, amount: int, source: str | None, target: str | None
) -> None:
    found = extract_arguments(prompt, schema)
    assert found.arguments == {"amount": amount, **_pair(schema, source, target)}
    names = list(_pair(schema, "x", "x"))
    assert found.missing == [name for name, code in zip(names, (source, target), strict=True) if code is None]


def test_a_qualified_name_is_not_read_as_the_bare_one() -> None:
    # Canadian dollars are not US dollars: with no CAD among the options, the source is asked for.
    prompt = "convert 5 canadian dollars to US dollars"
    found = extract_arguments(prompt, ENUM)
    assert found.arguments == {"amount": 5, "to_currency": "USD"} and found.missing == ["from_currency"]
    assert extract_arguments(prompt, FREE).arguments == {"amount": 5, "source": "CAD", "target": "USD"}


def test_pounds_are_money_only_where_a_parameter_takes_currencies() -> None:
    weight = {
        "type": "object",
        "properties": {"weight_kg": {"type": "number", "description": "in kilograms"}},
    }
    assert extract_arguments("ship a parcel of 5 pounds", weight).arguments == {
        "weight_kg": pytest.approx(2.268, abs=1e-3)
    }
    assert extract_arguments("ship a parcel of 5 pounds", ENUM).arguments == {
        "amount": 5,
        "from_currency": "GBP",
    }


def test_codes_that_are_words_count_only_in_capitals() -> None:
    assert [m.code for m in currency_mentions("try to rub it in, then pay 3 TRY or 5 RUB")] == ["TRY", "RUB"]
    assert [m.code for m in currency_mentions("Turkish lira, 10 bucks, ₹20")] == ["TRY", "USD", "INR"]
