"""Documents as services write them: 3.1's schema keywords, `readOnly` and `writeOnly`, a `$ref` with
a description beside it, a discriminator, a Swagger 2.0 document, a webhooks-only one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.sources.openapi.echo import echoed, openapi, runtime_for, serve_echo
from toolmesh.gateway.sources.openapi import OpenApiRuntime

SCHEMAS = {
    "Order": {
        "type": "object",
        "required": ["id", "item", "secret"],
        "properties": {
            "id": {"type": "integer", "readOnly": True},
            "item": {"$ref": "#/components/schemas/Item", "description": "What is ordered."},
            "secret": {"type": "string", "writeOnly": True},
            "note": {"type": ["string", "null"], "examples": ["leave at the door"]},
            "kind": {"const": "order"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "pet": {"$ref": "#/components/schemas/Pet"},
        },
    },
    "Item": {"type": "object", "properties": {"sku": {"type": "string"}}, "additionalProperties": False},
    "Pet": {
        "oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}],
        "discriminator": {"propertyName": "type"},
    },
    "Cat": {"type": "object", "properties": {"type": {"const": "cat"}}},
    "Dog": {"type": "object", "properties": {"type": {"const": "dog"}}},
}
ORDER = {"$ref": "#/components/schemas/Order"}
PATHS = {
    "/echo/orders": {
        "post": {
            "operationId": "createOrder",
            "requestBody": {"required": True, "content": {"application/json": {"schema": ORDER}}},
            "responses": {"201": {"description": "made", "content": {"application/json": {"schema": ORDER}}}},
        }
    }
}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serve_echo() as url:
        yield url


@pytest.fixture
async def runtime(tmp_path: Path, origin: str) -> Any:
    document = openapi(
        PATHS,
        components={"schemas": SCHEMAS},
        jsonSchemaDialect="https://spec.openapis.org/oas/3.1/dialect/base",
    )
    async with runtime_for(document, tmp_path, base_url=origin) as started:
        yield started


async def test_read_only_and_write_only_properties_go_one_way(runtime: OpenApiRuntime) -> None:
    spec = runtime.specs[0]
    arguments = spec.input_schema
    # The service sets `id`: no argument, not required; `secret` is the caller's to send.
    assert list(arguments["properties"]) == ["item", "secret", "note", "kind", "tags", "pet"]
    assert arguments["required"] == ["item", "secret"]
    answer = spec.output_schema
    assert answer is not None and answer["$ref"] == "#/$defs/Order"
    order = answer["$defs"]["Order"]
    assert "secret" not in order["properties"] and order["required"] == ["id", "item"]
    assert "id" in order["properties"]
    sent = await echoed(runtime, "createOrder", {"item": {"sku": "a1"}, "secret": "s"})
    assert json.loads(sent["body"]) == {"item": {"sku": "a1"}, "secret": "s"}


async def test_31_keywords_and_a_described_ref_are_kept(runtime: OpenApiRuntime) -> None:
    properties = runtime.specs[0].input_schema["properties"]
    assert properties["item"] == {"description": "What is ordered.", "$ref": "#/$defs/Item"}
    assert properties["note"] == {"type": ["string", "null"], "examples": ["leave at the door"]}
    assert properties["kind"] == {"const": "order"}
    assert properties["tags"]["additionalProperties"] == {"type": "string"}
    definitions = runtime.specs[0].input_schema["$defs"]
    assert definitions["Item"]["additionalProperties"] is False
    # JSON Schema has no discriminator; the oneOf says it all.
    assert definitions["Pet"] == {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}


async def test_a_swagger_2_document_is_refused_with_what_to_do(tmp_path: Path) -> None:
    swagger = {"swagger": "2.0", "info": {"title": "old", "version": "1"}, "paths": {}}
    async with runtime_for(swagger, tmp_path, base_url="http://127.0.0.1:9") as runtime:
        assert runtime.error is not None and not runtime.ready
        assert "a Swagger 2.0 document: toolmesh reads OpenAPI 3.0 and 3.1; convert it first" in runtime.error


async def test_a_webhooks_only_document_serves_no_functions_without_failing(tmp_path: Path) -> None:
    webhooks = {"newPet": {"post": {"requestBody": {"content": {"application/json": {}}}, "responses": {}}}}
    document = {"openapi": "3.1.0", "info": {"title": "hooks", "version": "1"}, "webhooks": webhooks}
    async with runtime_for(document, tmp_path, base_url="http://127.0.0.1:9") as runtime:
        assert runtime.error is None and runtime.ready and runtime.specs == []
