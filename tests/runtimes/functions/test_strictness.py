"""Strict JSON at every depth: nested models, dataclasses, TypedDicts, lists, dicts and unions."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict

import toolmesh
from toolmesh.runtimes.functions.discovery import host_function


class Line(pydantic.BaseModel):
    # Its own config is lax and ignores unknown keys: the arguments' rules win anyway.
    model_config = pydantic.ConfigDict(strict=False)

    sku: str
    qty: int


@dataclasses.dataclass
class Parcel:
    weight: float
    fragile: bool = False


class Note(TypedDict):
    text: str


class Open(pydantic.BaseModel):
    """Declares extra="allow" itself: its unknown keys are kept, its fields' are not."""

    model_config = pydantic.ConfigDict(extra="allow")
    tag: str
    line: Line | None = None


def order(
    lines: list[Line],
    parcels: list[Parcel] = [],  # noqa: B006
    notes: dict[str, Note] = {},  # noqa: B006
    either: Line | int = 0,
    meta: Open | None = None,
) -> None:
    """Place an order."""


def check(arguments: dict[str, Any], fn: Any = order) -> dict[str, Any]:
    return host_function(fn).validator.validate(json.dumps(arguments).encode())


def refused(arguments: dict[str, Any], fn: Any = order) -> dict[str, toolmesh.Violation]:
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        check(arguments, fn)
    return {v.path: v for v in caught.value.violations}


def test_nothing_is_coerced_at_any_depth() -> None:
    found = refused(
        {
            "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": "2"}],
            "parcels": [{"weight": 1, "fragile": 1}],
            "notes": {"gift": {"text": 5}},
            "either": {"sku": "c", "qty": 2.0},
        }
    )
    assert found["lines[1].qty"].message == 'lines[1].qty: expected integer, got string "2"'
    assert found["parcels[0].fragile"].got == "integer 1"
    assert found["notes.gift.text"].expected == "string"
    # The top level's rule, at depth: 2.0 is a number, not an integer (a union member says so too).
    assert found["either.qty"].got == "number 2.0"
    assert "lines[0].qty" not in found and "parcels[0].weight" not in found  # 1 is a fine number


def test_unknown_keys_are_refused_at_any_depth() -> None:
    found = refused(
        {
            "lines": [{"sku": "a", "qty": 1, "price": 3}],
            "parcels": [{"weight": 1.5, "colour": "red"}],
            "notes": {"gift": {"text": "hi", "font": "serif"}},
            "either": {"sku": "c", "qty": 2, "x": 1},
        }
    )
    assert {"lines[0].price", "parcels[0].colour", "notes.gift.font", "either.x"} <= set(found)
    assert found["lines[0].price"].message == "lines[0].price: unexpected key"
    assert found["lines[0].price"].expected == "no such key"


def test_keys_that_need_quoting_are_quoted_in_the_path() -> None:
    found = refused({"lines": [], "notes": {"a b": {"text": 1}}})
    assert set(found) == {'notes["a b"].text'}


def test_valid_arguments_arrive_as_the_users_own_classes() -> None:
    arguments = check({"lines": [{"sku": "a", "qty": 2}], "parcels": [{"weight": 2}], "either": 3})
    assert type(arguments["lines"][0]) is Line and arguments["lines"][0].qty == 2
    assert arguments["parcels"] == [Parcel(2.0)] and arguments["either"] == 3


def test_a_class_that_allows_extra_keys_keeps_them_and_its_fields_stay_strict() -> None:
    meta = check({"lines": [], "meta": {"tag": "t", "colour": "red"}})["meta"]
    assert meta.model_extra == {"colour": "red"}
    found = refused({"lines": [], "meta": {"tag": "t", "line": {"sku": "a", "qty": 1, "price": 2}}})
    assert set(found) == {"meta.line.price"}
    assert set(refused({"lines": [{"sku": "a", "qty": 1, "x": 0}], "meta": {"tag": "t", "y": 1}})) == {
        "lines[0].x"
    }


def test_kwargs_take_extra_arguments_but_nested_objects_stay_closed() -> None:
    def loose(line: Line, **extra: Any) -> None: ...

    assert check({"line": {"sku": "a", "qty": 1}, "colour": "red"}, loose)["colour"] == "red"
    assert set(refused({"line": {"sku": "a", "qty": 1, "x": 1}, "colour": "red"}, loose)) == {"line.x"}


def test_the_schema_says_which_objects_are_closed() -> None:
    schema = host_function(order).spec.input_schema
    defs = schema["$defs"]
    assert schema["additionalProperties"] is False
    assert defs["Line"]["additionalProperties"] is False
    assert defs["Parcel"]["additionalProperties"] is False
    assert defs["Note"]["additionalProperties"] is False
    assert defs["Open"]["additionalProperties"] is True
    # The user's class is untouched: only the published schema is closed.
    assert "additionalProperties" not in Line.model_json_schema()
