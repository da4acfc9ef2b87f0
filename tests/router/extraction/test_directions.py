"""Signed changes: words that mean a decrease make the number negative, unless it cannot be."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from toolmesh.router.extraction.extract import extract_arguments

TODAY = dt.date(2026, 3, 10)
REPRICE = {
    "type": "object",
    "properties": {
        "sku": {"type": "string"},
        "percent": {
            "type": "number",
            "description": "Percentage change of the price: positive raises it, negative lowers it",
        },
    },
    "required": ["sku", "percent"],
}


def number(prompt: str, spec: dict[str, Any]) -> Any:
    found = extract_arguments(prompt, spec, today=TODAY).arguments
    return next(v for k, v in found.items() if spec["properties"][k]["type"] in ("number", "integer"))


def one(name: str, **schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {name: schema}, "required": [name]}


@pytest.mark.parametrize(
    ("prompt", "percent"),
    [
        ("make sku HW-001 10% cheaper", -10),
        ("give HW-001 a 15% discount", -15),
        ("cut the price of HW-001 by 20%", -20),
        ("reduce HW-001 by 5 percent", -5),
        ("HW-001: 10% off", -10),
        ("mark HW-001 down by 7%", -7),
        ("raise HW-001 by 5%", 5),
        ("make HW-001 8% more expensive", 8),
        ("HW-001 up by 3%", 3),
        ("reprice HW-001 by 12%", 12),  # no direction word: as written
        ("change HW-001 by -3%", -3),  # an explicit sign wins
        ("lower HW-001 by +4%, no, wait", 4),
        ("don't lower HW-001, raise it 6%", 6),  # a negated word says nothing
    ],
)
def test_a_price_change_takes_the_direction_of_its_words(prompt: str, percent: float) -> None:
    found = extract_arguments(prompt, REPRICE, today=TODAY)
    assert found.arguments == {"sku": "HW-001", "percent": percent}


@pytest.mark.parametrize(
    ("prompt", "spec", "expected"),
    [
        ("reduce the offset by 2 hours", one("offset", type="integer", description="Offset in hours"), -2),
        ("make it 3 less", one("delta", type="number"), -3),
        ("turn it down by 3", one("temperature", type="number", minimum=-50), -3),
        # Where the value ends up, not by how much it moves.
        ("lower the offset to 2", one("offset", type="integer"), 2),
        # Cannot be negative, or is no change: the number stays as written.
        ("reduce by 4", one("change", type="number", minimum=0), 4),
        ("reduce by 4", one("change", type="number", description="A non-negative change"), 4),
        ("give a 15% discount", one("discount", type="number"), 15),
        ("drop 5 items", one("count", type="integer"), 5),
    ],
)
def test_only_signed_changes_turn_negative(prompt: str, spec: dict[str, Any], expected: float) -> None:
    assert number(prompt, spec) == expected
