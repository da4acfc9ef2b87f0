"""Prompts built to be slow: extraction's work grows linearly with the prompt, and the answers
stay what they are on ordinary prompts."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

from toolmesh.config.config_defaults import DEFAULT_MAX_PROMPT_CHARS
from toolmesh.router.extraction.extract import extract_arguments

TODAY = dt.date(2026, 3, 10)
ADD = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
EVERY_KIND = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
        "date": {"type": "string", "format": "date"},
        "order_id": {"type": "string"},
        "urgent": {"type": "boolean"},
        "to": {"type": "string", "description": "Recipient email address"},
        "query": {"type": "string"},
    },
    "required": ["city", "days"],
}
# Each repeated to the length asked: numbers for every parameter to weigh, a word boundary per
# letter for the email search, thousands of dates, places, identifiers and free-text cues.
UNITS = ["what is 2 plus 2 ", "5 ", "a.", "today ", "in Oslo ", "order a1 ", "x@y.co "]


def hostile(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def cpu_seconds(size: int) -> float:
    """The least CPU time of three runs over every hostile prompt of `size` characters."""
    runs = []
    for _ in range(3):
        started = time.process_time()
        for unit in UNITS:
            for schema in (ADD, EVERY_KIND):
                extract_arguments(hostile(unit, size), schema, today=TODAY)
        runs.append(time.process_time() - started)
    return min(runs)


def test_extraction_work_grows_linearly_with_the_prompt() -> None:
    # A complexity check, not a speed target (those belong in bench/): eight
    # times the text costs about eight times the work when linear, and ~64 times when
    # quadratic, as extraction was (1.3 s for one 8,000-character prompt of "5 5 5 ...").
    small, large = cpu_seconds(DEFAULT_MAX_PROMPT_CHARS // 4), cpu_seconds(2 * DEFAULT_MAX_PROMPT_CHARS)
    assert large / small < 24, f"{small:.3f}s -> {large:.3f}s for 8x the text"


@pytest.mark.parametrize(
    ("prompt", "schema", "expected"),
    [
        (hostile("what is 2 plus 2 ", DEFAULT_MAX_PROMPT_CHARS), ADD, {"a": 2, "b": 2}),
        ("İstanbul İzmir: b is 3 and a is 4", ADD, {"a": 4, "b": 3}),
        (
            "mail x@a.b+y@c.d about lunch",
            {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}},
            {"to": "x@a.b"},
        ),
    ],
)
def test_answers_are_the_ordinary_ones(prompt: str, schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert extract_arguments(prompt, schema, today=TODAY).arguments == expected
