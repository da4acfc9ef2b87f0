"""Operations as functions: names, merged arguments and schemas, on documents made for each case."""

from __future__ import annotations

from typing import Any

import pytest

from toolmesh.gateway.sources.openapi.operations import BODY, read_operations
from toolmesh.gateway.sources.openapi.schemas import DocumentError
from toolmesh.runtimes.functions.spec import check_name, function_name


def document(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"openapi": "3.0.0", "paths": paths, "components": {"schemas": schemas or {}}}


OK = {"200": {"description": "ok"}}


def test_names_are_valid_unique_and_fit_with_the_namespace() -> None:
    taken: set[str] = set()
    names = [
        function_name(raw, 20, taken, prefix="op")
        for raw in ("get user", "get-user!", "9lives", "x" * 40, "x" * 41)
    ]
    assert names[0] == "get_user" and names[1].startswith("get_user_") and names[1] != names[0]
    assert names[2] == "op_9lives"
    assert all(len(n) <= 20 and check_name(n) for n in names) and len(set(names)) == 5


def test_an_operation_without_an_id_is_named_by_method_and_path() -> None:
    ops = read_operations(document({"/users/{id}/posts": {"get": {"responses": OK}}}), "blog")
    assert ops[0].spec.name == "get_users_id_posts"
    assert ops[0].spec.description == "GET /users/{id}/posts"


def test_a_body_that_clashes_with_a_parameter_is_one_argument() -> None:
    operation = {
        "parameters": [{"name": "id", "in": "query", "schema": {"type": "string"}}],
        "requestBody": {
            "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {}}}}}
        },
        "responses": OK,
    }
    spec = read_operations(document({"/x": {"post": operation}}), "ns")[0].spec
    assert set(spec.input_schema["properties"]) == {"id", BODY}
    assert "required" not in spec.input_schema  # neither the parameter nor the body is required


def test_unions_and_nullable_without_a_type_become_json_schema() -> None:
    schema = {"oneOf": [{"$ref": "#/components/schemas/A"}, {"type": "integer"}], "nullable": True}
    operation = {"parameters": [{"name": "v", "in": "query", "schema": schema}], "responses": OK}
    spec = read_operations(document({"/x": {"get": operation}}, {"A": {"type": "string"}}), "ns")[0].spec
    assert spec.input_schema["properties"]["v"] == {
        "anyOf": [{"oneOf": [{"$ref": "#/$defs/A"}, {"type": "integer"}]}, {"type": "null"}]
    }
    assert spec.input_schema["$defs"] == {"A": {"type": "string"}}


def test_include_and_exclude_match_ids_and_tags() -> None:
    paths = {
        "/a": {"get": {"operationId": "listA", "tags": ["read"], "responses": OK}},
        "/b": {"get": {"operationId": "listB", "tags": ["read", "internal"], "responses": OK}},
        "/c": {"post": {"operationId": "makeC", "responses": OK}},
    }
    names = [op.spec.name for op in read_operations(document(paths), "ns", ("read", "make*"), ("internal",))]
    assert names == ["listA", "makeC"]


def test_a_reference_to_nothing_names_the_operation() -> None:
    operation = {"parameters": [{"$ref": "#/components/parameters/Gone"}], "responses": OK}
    with pytest.raises(
        DocumentError, match=r"GET /x: \$ref '#/components/parameters/Gone' points at nothing"
    ):
        read_operations(document({"/x": {"get": operation}}), "ns")


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (
            ["application/x-www-form-urlencoded", "application/merge-patch+json"],
            "application/merge-patch+json",
        ),
        (["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"], "multipart/form-data"),
        (["application/xml", "text/plain"], "text/plain"),
        (["application/pdf", "application/xml"], "application/xml"),
        (["image/*"], "application/octet-stream"),
    ],
)
def test_the_body_sent_is_json_then_forms_then_text_then_bytes(offered: list[str], chosen: str) -> None:
    content = {
        kind: {"schema": {"type": "object", "properties": {"a": {"type": "string"}}}} for kind in offered
    }
    operation = {"requestBody": {"content": content}, "responses": OK}
    assert read_operations(document({"/x": {"post": operation}}), "ns")[0].body_media == chosen
