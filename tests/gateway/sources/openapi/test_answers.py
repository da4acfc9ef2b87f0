"""Answers as real services give them: no body, text, bytes, JSON with a charset or a `+json` type,
arrays, `default` responses, redirects, a proxy's HTML page, one too large to read."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.sources.openapi.echo import ELSEWHERE, PNG, call, openapi, runtime_for, serve_echo
from toolmesh.gateway.mcp.convert import call_result, tool
from toolmesh.gateway.sources.openapi import OpenApiRuntime, answers
from toolmesh.runtimes.functions.results import Binary, Json, Text

ITEM = {"type": "object", "properties": {"id": {"type": "integer"}}}


def getter(kind: str, responses: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"get": {"operationId": kind, "responses": responses or {"200": {"description": "ok"}}}}


PATHS = {
    f"/answers/{kind}": getter(kind)
    for kind in ("empty", "text", "png", "charset", "problem", "hal", "moved", "elsewhere", "proxy", "huge")
}
PATHS["/answers/array"] = getter(
    "array",
    {
        "200": {"$ref": "#/components/responses/Items"},
        "default": {"description": "an error", "content": {"application/json": {"schema": ITEM}}},
    },
)
# Only a `default` response: it is the answer's schema.
PATHS["/answers/hal"] = getter(
    "hal", {"default": {"description": "ok", "content": {"application/hal+json": {"schema": ITEM}}}}
)
COMPONENTS = {
    "responses": {
        "Items": {
            "description": "items",
            "content": {
                "application/json": {
                    "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}
                }
            },
        }
    },
    "schemas": {"Item": ITEM},
}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serve_echo() as url, serve_echo() as elsewhere:
        ELSEWHERE[:] = [elsewhere]
        yield url


@pytest.fixture
async def runtime(tmp_path: Path, origin: str) -> Any:
    async with runtime_for(openapi(PATHS, components=COMPONENTS), tmp_path, base_url=origin) as started:
        yield started


async def test_bodies_of_each_kind(runtime: OpenApiRuntime) -> None:
    empty = await call(runtime, "empty")
    assert not empty.is_error and empty.content == [] and empty.structured_json is None
    assert (await call(runtime, "text")).content == [Text("plain words")]
    png = await call(runtime, "png")
    assert png.content == [Binary(PNG, "image/png")]
    # An MCP client gets an image, as from a stdio server.
    image = call_result(next(s for s in runtime.specs if s.name == "png"), png).content[0]
    assert image.type == "image" and base64.b64decode(image.data) == PNG
    assert (await call(runtime, "charset")).structured == {"ok": "ü"}
    hal = await call(runtime, "hal")
    assert hal.structured == {"id": 1} and isinstance(hal.content[0], Json)
    problem = await call(runtime, "problem")
    assert (
        problem.is_error and problem.text == 'GET /answers/problem answered 400 Bad Request: {"title": "bad"}'
    )


async def test_an_array_answer_is_wrapped_for_mcp(runtime: OpenApiRuntime) -> None:
    specs = {spec.name: spec for spec in runtime.specs}
    # The schema of a `$ref`d response, an array: MCP's outputSchema must be an object, so it wraps.
    assert specs["array"].output_schema == {
        "type": "array",
        "items": {"$ref": "#/$defs/Item"},
        "$defs": {"Item": ITEM},
    }
    assert specs["hal"].output_schema == {"type": "object", **ITEM}
    assert tool(specs["array"]).output_schema["properties"]["result"]["type"] == "array"
    result = await call(runtime, "array")
    assert result.structured == [{"id": 1}, {"id": 2}]
    assert call_result(specs["array"], result).structured_content == {"result": [{"id": 1}, {"id": 2}]}


async def test_redirects_are_followed_within_the_service_only(runtime: OpenApiRuntime) -> None:
    moved = await call(runtime, "moved")
    assert not moved.is_error and moved.structured["path"] == "/echo/moved-here"
    elsewhere = await call(runtime, "elsewhere")
    assert elsewhere.is_error
    assert f"a redirect to {ELSEWHERE[0]}/echo/stolen (another origin: not followed)" in elsewhere.text


async def test_a_proxys_html_page_is_quoted_by_its_title(runtime: OpenApiRuntime) -> None:
    page = await call(runtime, "proxy")
    assert page.is_error
    assert page.text == "GET /answers/proxy answered 502 Bad Gateway: 502 Bad Gateway (an HTML page)"


async def test_an_answer_too_large_is_an_error_not_a_gateway_out_of_memory(
    runtime: OpenApiRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answers, "MAX_ANSWER_BYTES", 1024 * 1024)
    huge = await call(runtime, "huge")
    assert huge.is_error and "more than the 1 MiB read" in huge.text
