"""Return values become content items and structured output."""

from __future__ import annotations

import dataclasses
import json

import pydantic
import pytest

from toolmesh.runtimes.functions.results import (
    Binary,
    ErrorInfo,
    Json,
    Resource,
    Result,
    Text,
    WithContent,
    describe,
    normalise,
    result_meta,
)


class Model(pydantic.BaseModel):
    name: str


@dataclasses.dataclass
class Data:
    size: int


@pytest.mark.parametrize(
    ("value", "structured"),
    [
        ({"a": 1}, {"a": 1}),
        ([1, 2], [1, 2]),
        (3, 3),
        (2.5, 2.5),
        (True, True),
        (Model(name="m"), {"name": "m"}),
        (Data(7), {"size": 7}),
    ],
)
def test_json_like_values_are_json_and_structured(value: object, structured: object) -> None:
    content, data = normalise(value)
    assert data is not None
    assert json.loads(data) == structured
    assert content == [Json(data)]


def test_other_kinds() -> None:
    assert normalise(None) == ([], None)
    assert normalise("hi") == ([Text("hi")], None)
    assert normalise(b"\x00\x01") == ([Binary(b"\x00\x01")], None)
    image = Binary(b"png", "image/png")
    assert normalise(image) == ([image], None)
    items = [Text("a"), Json.of({"b": 2})]
    assert normalise(items) == (items, None)


def test_a_structured_value_with_its_own_content_keeps_both() -> None:
    image = Binary(b"\x89PNG", "image/png")
    content, structured = normalise(WithContent({"size": 4}, [image, Text("a PNG")]))
    assert content == [image, Text("a PNG")] and structured is not None
    assert json.loads(structured) == {"size": 4}


def test_integers_stay_integers() -> None:
    big = 2**62 + 1
    _, data = normalise({"n": big})
    assert data == b'{"n":4611686018427387905}'


def test_unserialisable_values_raise_type_error() -> None:
    with pytest.raises(TypeError, match="returned a object, which is not JSON"):
        normalise(object())


def test_failure_results_explain_themselves() -> None:
    from toolmesh.errors import Violation

    error = ErrorInfo(
        "invalid_arguments", "invalid arguments", (Violation("a", "integer", "string", "a: bad"),)
    )
    result = Result.failure(error)
    assert result.is_error
    assert result.text == "invalid arguments\n- a: bad"
    assert type(error.to_exception()).__name__ == "InvalidArguments"


def test_a_resource_is_an_item_and_a_with_contents_meta_the_results() -> None:
    link = Resource("file:///a.pdf", "a.pdf", mime_type="application/pdf")
    assert normalise(link) == ([link], None)
    assert normalise([Text("see"), link]) == ([Text("see"), link], None)
    value = WithContent({"n": 1}, [link], {"ui": {"resourceUri": "ui://v"}})
    assert normalise(value) == ([link], b'{"n":1}')
    assert result_meta(value) == {"ui": {"resourceUri": "ui://v"}} and result_meta({"n": 1}) is None
    assert describe(link) == "resource_link file:///a.pdf (a.pdf, application/pdf)"
    assert describe(Resource("m://1", embedded=True, text="memo")) == "memo"
