"""FunctionDefinition(parameters={...}): a JSON Schema 2020-12 document, checked, served as written."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

import toolmesh
from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.hosted import HostedFunction

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"item": {"$anchor": "item", "type": "object", "properties": {"qty": {"type": "integer"}}}},
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}], "default": "fast"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "email": {"type": "string", "format": "email"},
        "limit": {"type": "integer", "minimum": 1},
    },
    "required": ["items"],
    "additionalProperties": False,
}


def host(schema: Any, name: str = "hand") -> HostedFunction:
    return toolmesh.FunctionDefinition(name=name, handler=lambda **kw: kw, parameters=schema).host()


def check(arguments: Any, schema: Any = SCHEMA) -> dict[str, Any]:
    return host(schema).validator.validate(json.dumps(arguments).encode())


def refused(arguments: Any, schema: Any = SCHEMA) -> dict[str, toolmesh.Violation]:
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        check(arguments, schema)
    return {v.path: v for v in caught.value.violations}


def test_the_schema_is_published_exactly_as_written() -> None:
    written = copy.deepcopy(SCHEMA)
    hosted = host(written)
    written["properties"].clear()  # the author changing their dict later changes nothing served
    assert hosted.spec.input_schema == SCHEMA


def test_valid_arguments_pass_with_defaults_filled_in() -> None:
    # Formats are annotations in 2020-12: "not-an-email" is a string, so it passes.
    assert check({"items": [{"qty": 2}], "email": "not-an-email"}) == {
        "items": [{"qty": 2}],
        "email": "not-an-email",
        "mode": "fast",
    }


def test_violations_are_named_by_path() -> None:
    found = refused({"items": [{"qty": 1}, {"qty": "2"}], "code": "abcd", "limit": 0, "extra": True})
    assert set(found) == {"items[1].qty", "code", "limit", "extra"}
    assert found["items[1].qty"].message == 'items[1].qty: expected integer, got string "2"'
    assert found["extra"].expected == "no such argument"
    assert found["limit"].expected == "minimum 1"
    assert refused({})["items"].message == "items: missing required argument"
    assert set(refused({"items": [], "mode": "medium"})) == {"mode"}


def test_booleans_are_not_numbers() -> None:
    assert refused({"items": [{"qty": True}]})["items[0].qty"].got == "boolean true"


def test_null_for_an_optional_argument_means_its_default() -> None:
    assert check({"items": [], "mode": None, "limit": None}) == {"items": [], "mode": "fast"}


@pytest.mark.parametrize(("body", "got"), [(b"[]", "array"), (b"{oops", "malformed JSON")])
def test_arguments_must_be_a_json_object(body: bytes, got: str) -> None:
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        host(SCHEMA).validator.validate(body)
    assert [(v.path, v.got) for v in caught.value.violations] == [("", got)]


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid JSON Schema 2020-12"),
        ({"type": "object", "required": "a"}, "at required"),
        ({"type": "array"}, '"type": "object"'),
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
            "must be JSON Schema 2020-12",
        ),
        ({"type": "object", "default": {1, 2}}, "not a JSON document"),
    ],
)
def test_a_schema_that_is_not_valid_2020_12_fails_at_load_naming_the_function(
    schema: dict[str, Any], says: str
) -> None:
    with pytest.raises(DefinitionError, match=rf"^tools\.broken: .*{re.escape(says)}"):
        toolmesh.FunctionDefinition(
            name="broken", namespace="tools", handler=lambda: 0, parameters=schema
        ).host()


def test_parameters_that_are_neither_a_list_of_parameters_nor_a_schema_are_refused() -> None:
    with pytest.raises(DefinitionError, match=r"list of toolmesh\.Parameter or a JSON Schema"):
        toolmesh.FunctionDefinition(name="odd", handler=lambda: 0, parameters=["city"]).host()  # type: ignore[list-item]


#: Flat schemas as MCP servers write them (the Python SDK's, zod's): checked without jsonschema's
#: machinery when they pass, so their verdicts must be jsonschema's.
FLAT: list[dict[str, Any]] = [
    {
        "type": "object",
        "title": "addArguments",
        "properties": {"a": {"title": "A", "type": "integer"}, "b": {"type": "integer", "default": 1}},
        "required": ["a"],
    },
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "what to echo", "format": "email"},
            "loud": {"type": "boolean"},
            "ratio": {"type": "number"},
        },
        "required": ["message"],
        "additionalProperties": False,
    },
]
FLAT_ARGUMENTS: list[Any] = [
    {},
    {"a": 1},
    {"a": 1, "b": 2, "c": "extra"},
    {"a": 1.0},
    {"a": True},
    {"a": "1"},
    {"a": None},
    {"message": "hi"},
    {"message": "hi", "loud": 1},
    {"message": "hi", "loud": False, "ratio": 2},
    {"message": "hi", "ratio": 0.5, "other": 1},
    {"message": 3},
    {"message": None, "loud": None},
]


@pytest.mark.parametrize("schema", FLAT)
@pytest.mark.parametrize("arguments", FLAT_ARGUMENTS)
def test_flat_schemas_are_judged_as_jsonschema_judges_them(schema: dict[str, Any], arguments: Any) -> None:
    import jsonschema

    hosted = host(schema)
    assert hosted.validator._flat is not None  # type: ignore[attr-defined]
    given = {k: v for k, v in arguments.items() if v is not None or k in schema["required"]}
    valid = jsonschema.Draft202012Validator(schema).is_valid(given)
    if valid:
        defaults = {k: p["default"] for k, p in schema["properties"].items() if "default" in p}
        assert check(arguments, schema) == {**defaults, **given}
    else:
        assert refused(arguments, schema)


def test_a_property_with_a_list_of_types_is_left_to_jsonschema() -> None:
    # As @modelcontextprotocol/server-sequential-thinking declares its optional integers: hosting
    # it once failed with "unhashable type: 'list'", and the whole runtime with it.
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"thought": {"type": "string"}, "revises": {"type": ["integer", "null"]}},
        "required": ["thought"],
    }
    hosted = host(schema)
    assert hosted.validator._flat is None  # type: ignore[attr-defined]
    assert check({"thought": "a", "revises": 2}, schema) == {"thought": "a", "revises": 2}
    assert refused({"thought": "a", "revises": "two"}, schema)
