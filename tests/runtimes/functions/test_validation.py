"""Argument validation: every violation named with its path, what was expected and what came."""

from __future__ import annotations

from typing import Literal

import pydantic
import pytest

import toolmesh
from toolmesh import error_shapes
from toolmesh.runtimes.functions.discovery import host_function


class Item(pydantic.BaseModel):
    sku: str
    quantity: int


def order(customer: str, items: list[Item], express: bool = False, size: Literal["s", "m"] = "s") -> None:
    """Place an order."""


def violations(body: bytes) -> list[toolmesh.Violation]:
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        host_function(order).validator.validate(body)
    return list(caught.value.violations)


def test_every_violation_is_named() -> None:
    found = violations(
        b'{"items": [{"sku": "a", "quantity": "two"}, {"quantity": 1}],'
        b' "express": "yes", "size": "xl", "x": 1}'
    )
    by_path = {v.path: v for v in found}
    assert set(by_path) == {"customer", "items[0].quantity", "items[1].sku", "express", "size", "x"}
    assert by_path["customer"].message == "customer: missing required argument"
    assert by_path["customer"].got == "nothing"
    assert by_path["items[0].quantity"].expected == "integer"
    assert by_path["items[0].quantity"].got == 'string "two"'
    assert by_path["items[0].quantity"].message == 'items[0].quantity: expected integer, got string "two"'
    assert by_path["express"].expected == "boolean"
    assert by_path["size"].expected == "'s' or 'm'"
    assert by_path["x"].expected == "no such argument"


def test_the_error_message_summarises() -> None:
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        host_function(order).validator.validate(b'{"customer": 5, "items": 3}')
    error = caught.value
    assert error.code == "invalid_arguments" and error.http_status == 422
    assert str(error) == (
        "invalid arguments: customer: expected string, got integer 5; items: expected array, got integer 3"
    )
    assert error_shapes.envelope(error)["error"]["violations"][0]["path"] == "customer"


@pytest.mark.parametrize(
    ("body", "got"),
    [(b"[1, 2]", "array"), (b'"text"', "string"), (b"{not json", "malformed JSON"), (b"null", "null")],
)
def test_arguments_must_be_a_json_object(body: bytes, got: str) -> None:
    (violation,) = violations(body)
    assert violation.path == ""
    assert violation.expected == "a JSON object"
    assert violation.got == got


def test_empty_body_means_no_arguments() -> None:
    def ping() -> str:
        return "pong"

    assert host_function(ping).validator.validate(b"") == {}


def test_types_are_not_coerced() -> None:
    """Strict JSON: "5" is not an integer and 1 is not a boolean; 3 is a fine number."""

    def typed(n: int, flag: bool, ratio: float) -> None: ...

    validator = host_function(typed).validator
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        validator.validate(b'{"n": "5", "flag": 1, "ratio": 3}')
    assert [v.path for v in caught.value.violations] == ["n", "flag"]
    assert validator.validate(b'{"n": 5, "flag": true, "ratio": 3}') == {"n": 5, "flag": True, "ratio": 3.0}


def test_long_inputs_are_abbreviated() -> None:
    (violation,) = [
        v for v in violations(b'{"customer": "' + b"x" * 500 + b'", "items": 1}') if v.path == "items"
    ]
    long = [
        v
        for v in violations(b'{"customer": 1, "items": [], "size": "' + b"y" * 500 + b'"}')
        if v.path == "size"
    ]
    assert violation.got == "integer 1"
    assert len(long[0].got) < 60 and long[0].got.endswith("...")


def test_arguments_named_like_basemodel_attributes_work() -> None:
    def shadow(json: str, schema: int, model_config: bool = False) -> None: ...

    validator = host_function(shadow).validator
    assert validator.validate(b'{"json": "a", "schema": 1}') == {"json": "a", "schema": 1}
