"""Parameters as the spec writes them (style, explode, allowReserved, content), names that are not
identifiers, names shared between locations, path-level parameters: on the echo service."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.sources.openapi.echo import echoed, openapi, runtime_for, serve_echo
from toolmesh.gateway.sources.openapi import OpenApiRuntime

OK = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
ARRAY = {"type": "array", "items": {"type": "string"}}
OBJECT = {"type": "object", "properties": {"role": {"type": "string"}, "name": {"type": "string"}}}


def query(name: str, schema: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema, **more}


def path(name: str, schema: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, **more}


PATHS = {
    "/echo/query": {
        "get": {
            "operationId": "styles",
            "parameters": [
                query("ids", ARRAY),
                query("tags", ARRAY, explode=False),
                query("words", ARRAY, style="spaceDelimited", explode=False),
                query("pipes", ARRAY, style="pipeDelimited", explode=False),
                query("who", OBJECT),
                query("pair", OBJECT, explode=False),
                query("filter", OBJECT, style="deepObject", explode=True),
                query("next", {"type": "string"}, allowReserved=True),
                query("plain", {"type": "string"}),
                {"name": "where", "in": "query", "content": {"application/json": {"schema": OBJECT}}},
            ],
            "responses": OK,
        }
    },
    "/echo/simple/{id}/{ids}/{obj}/{exp}": {
        "get": {
            "operationId": "simple",
            "parameters": [
                path("id", {"type": "integer"}),
                path("ids", ARRAY),
                path("obj", OBJECT),
                path("exp", OBJECT, explode=True),
            ],
            "responses": OK,
        }
    },
    "/echo/label/{a}/{b}/{c}": {
        "get": {
            "operationId": "label",
            "parameters": [
                path("a", {"type": "string"}, style="label"),
                path("b", ARRAY, style="label"),
                path("c", ARRAY, style="label", explode=True),
            ],
            "responses": OK,
        }
    },
    "/echo/matrix/{a}/{b}/{c}/{d}": {
        "get": {
            "operationId": "matrix",
            "parameters": [
                path("a", {"type": "string"}, style="matrix"),
                path("b", ARRAY, style="matrix"),
                path("c", ARRAY, style="matrix", explode=True),
                path("d", OBJECT, style="matrix", explode=True),
            ],
            "responses": OK,
        }
    },
    "/echo/headers": {
        "get": {
            "operationId": "headers",
            "parameters": [
                {"name": "X-Request-ID", "in": "header", "schema": {"type": "string"}},
                {"name": "X-Tags", "in": "header", "schema": ARRAY},
                {"name": "X-Who", "in": "header", "schema": OBJECT, "explode": True},
                {"name": "session", "in": "cookie", "schema": {"type": "string"}},
            ],
            "responses": OK,
        }
    },
    "/echo/items/{id}": {
        # Path-level parameters, shared; the operation's own `limit` replaces the path's.
        "parameters": [
            path("id", {"type": "string"}),
            query("limit", {"type": "integer"}, description="the path's"),
        ],
        "get": {
            "operationId": "getItem",
            "parameters": [
                query("limit", {"type": "integer"}, description="the operation's", required=True),
                query("id", {"type": "string"}),
                query("page[size]", {"type": "integer"}),
                query("filter.name", {"type": "string"}),
            ],
            "responses": OK,
        },
        "delete": {"operationId": "deleteItem", "responses": OK},
    },
}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serve_echo() as url:
        yield url


@pytest.fixture
async def runtime(tmp_path: Path, origin: str) -> Any:
    async with runtime_for(openapi(PATHS), tmp_path, base_url=origin) as started:
        yield started


async def test_query_parameters_in_each_style(runtime: OpenApiRuntime) -> None:
    got = await echoed(
        runtime,
        "styles",
        {
            "ids": ["a", "b c"],
            "tags": ["x", "y,z"],
            "words": ["one", "two"],
            "pipes": ["p", "q"],
            "who": {"role": "admin", "name": "Al"},
            "pair": {"role": "admin", "name": "Al"},
            "filter": {"role": "admin", "name": "Al"},
            "next": "/a/b?c=d",
            "plain": "/a/b?c=d&e",
            "where": {"role": "x"},
        },
    )
    assert got["query"].split("&") == [
        "ids=a",
        "ids=b%20c",
        "tags=x,y%2Cz",
        "words=one%20two",
        "pipes=p|q",
        "role=admin",
        "name=Al",
        "pair=role,admin,name,Al",
        "filter[role]=admin",
        "filter[name]=Al",
        "next=/a/b?c=d",
        "plain=%2Fa%2Fb%3Fc%3Dd%26e",
        "where=%7B%22role%22%3A%22x%22%7D",
    ]


async def test_path_parameters_in_each_style(runtime: OpenApiRuntime) -> None:
    obj = {"role": "admin", "name": "A/l"}
    got = await echoed(runtime, "simple", {"id": 5, "ids": ["3", "4"], "obj": obj, "exp": obj})
    assert got["path"] == "/echo/simple/5/3,4/role,admin,name,A%2Fl/role=admin,name=A%2Fl"
    got = await echoed(runtime, "label", {"a": "x", "b": ["3", "4"], "c": ["3", "4"]})
    assert got["path"] == "/echo/label/.x/.3,4/.3.4"
    got = await echoed(runtime, "matrix", {"a": "x", "b": ["3", "4"], "c": ["3", "4"], "d": obj})
    assert got["path"] == "/echo/matrix/;a=x/;b=3,4/;c=3;c=4/;role=admin;name=A%2Fl"


async def test_header_and_cookie_parameters(runtime: OpenApiRuntime) -> None:
    arguments = {"X-Request-ID": "r-1", "X-Tags": ["a", "b"], "X-Who": {"role": "admin"}, "session": "s 1"}
    got = await echoed(runtime, "headers", arguments)
    assert got["headers"]["x-request-id"] == "r-1"
    assert got["headers"]["x-tags"] == "a,b"
    assert got["headers"]["x-who"] == "role=admin"
    assert got["headers"]["cookie"] == "session=s%201"


async def test_path_level_parameters_are_shared_and_overridden_and_names_are_safe(
    runtime: OpenApiRuntime,
) -> None:
    specs = {spec.name: spec for spec in runtime.specs}
    schema = specs["getItem"].input_schema
    # `id` in the path and in the query; `page[size]` is no property name function-calling APIs take.
    assert list(schema["properties"]) == ["id", "limit", "query_id", "page_size", "filter.name"]
    assert schema["properties"]["limit"]["description"] == "the operation's"
    assert schema["required"] == ["id", "limit"]
    assert specs["deleteItem"].input_schema["required"] == ["id"]
    arguments = {"id": "a b", "limit": 3, "query_id": "q", "page_size": 10, "filter.name": "x"}
    got = await echoed(runtime, "getItem", arguments)
    assert got["path"] == "/echo/items/a%20b"
    assert got["query"] == "limit=3&id=q&page[size]=10&filter.name=x"
    assert (await echoed(runtime, "deleteItem", {"id": "7"}))["method"] == "DELETE"


async def test_a_path_parameter_the_document_forgot_is_still_an_argument(tmp_path: Path, origin: str) -> None:
    paths = {"/echo/users/{user_id}/posts/{post}": {"get": {"operationId": "post", "responses": OK}}}
    async with runtime_for(openapi(paths), tmp_path, base_url=origin) as runtime:
        schema = runtime.specs[0].input_schema
        assert schema["required"] == ["user_id", "post"]
        got = await echoed(runtime, "post", {"user_id": "u 1", "post": 7})
        assert got["path"] == "/echo/users/u%201/posts/7"


async def test_a_body_with_property_names_apis_refuse_is_one_argument(tmp_path: Path, origin: str) -> None:
    linked = {"type": "object", "properties": {"@type": {"type": "string"}, "name": {"type": "string"}}}
    body = {"content": {"application/ld+json": {"schema": linked}}}
    paths = {"/echo/things": {"post": {"operationId": "make", "requestBody": body, "responses": OK}}}
    async with runtime_for(openapi(paths), tmp_path, base_url=origin) as runtime:
        assert list(runtime.specs[0].input_schema["properties"]) == ["body"]
        got = await echoed(runtime, "make", {"body": {"@type": "Person", "name": "Al"}})
        assert got["headers"]["content-type"] == "application/ld+json"
        assert json.loads(got["body"]) == {"@type": "Person", "name": "Al"}
