"""The function side of asking the caller: keys, answers, what is missing, schemas (asking.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import pytest
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from toolmesh import Context
from toolmesh.errors import InputRequired
from toolmesh.runtimes.functions import asking
from toolmesh.runtimes.functions.asking import ANSWERS_KEY, CAN_ANSWER_KEY, Elicited, Root, Sampled


def context(answers: dict[str, object] | None = None, can: str = "elicitation,sampling,roots") -> Context:
    metadata = {CAN_ANSWER_KEY: can} if can else {}
    if answers is not None:
        metadata[ANSWERS_KEY] = json.dumps(answers)
    return Context(function="f", request_id="r", metadata=metadata)


async def test_an_unanswered_ask_ends_the_call_listing_it() -> None:
    with pytest.raises(InputRequired) as raised:
        await context().elicit("Name?", {"name": str})
    asks = raised.value.details["asks"]
    assert asks == [
        {
            "kind": "elicitation",
            "key": "elicit-0",
            "params": {
                "message": "Name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        }
    ]
    assert raised.value.details["unable"] == []
    result = asking.input_required_result(raised.value)
    assert result.is_error and result.error is not None and result.error.code == "input_required"
    assert asking.pending_asks(result) == ([asking.Ask.from_dict(asks[0])], [])


async def test_answers_are_found_by_key_in_order_of_asking() -> None:
    ctx = context(
        {
            "elicit-0": {"action": "accept", "content": {"name": "Ada"}},
            "sample-1": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
            "roots-2": {"roots": [{"uri": "file:///a", "name": "a"}]},
            "extra": {"ignored": True},
        }
    )
    assert await ctx.elicit("Name?") == Elicited("accept", {"name": "Ada"})
    sampled = ctx.sample_sync("Say hi")
    assert (sampled.text, sampled.model) == ("hi", "m")
    assert isinstance(sampled, Sampled)
    assert await ctx.list_roots() == [Root("file:///a", "a")]


async def test_ask_all_reports_every_missing_ask_at_once() -> None:
    ctx = context({"b": {"action": "decline"}})
    with pytest.raises(InputRequired) as raised:
        await ctx.ask_all(
            asking.elicitation("A?", key="a"), asking.elicitation("B?", key="b"), asking.roots(key="c")
        )
    assert [a["key"] for a in raised.value.details["asks"]] == ["a", "c"]


async def test_a_caller_that_cannot_answer_is_named_in_the_error() -> None:
    ctx = context(can="")
    assert not ctx.can_ask("sampling")
    with pytest.raises(InputRequired) as raised:
        await ctx.sample("hello")
    assert raised.value.details["unable"] == ["sampling"]
    assert "MCP client" in raised.value.message


def test_schemas_from_plain_types() -> None:
    @dataclass
    class Trip:
        city: str
        days: int = 1

    class Pick(TypedDict):
        colour: Literal["red", "blue"]

    assert asking.requested_schema(Trip) == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 1}},
        "required": ["city"],
    }
    assert asking.requested_schema(Pick)["properties"]["colour"] == {
        "enum": ["red", "blue"],
        "type": "string",
    }
    raw = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert asking.requested_schema(raw) == raw
    assert asking.requested_schema(None) == {"type": "object", "properties": {}}
