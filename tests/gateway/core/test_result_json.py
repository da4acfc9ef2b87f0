"""The HTTP shape of a result (gateway/core/result_json.py) holds every content kind with its
annotations and `_meta`, and reads back as the same result (a job's result is kept as it)."""

from __future__ import annotations

import json

from tests.protocol.test_wire import CONTENT
from toolmesh.gateway.core.result_json import result_from_json, result_json
from toolmesh.runtimes.functions.results import Resource, Result, Text


def test_every_kind_reads_back_as_written() -> None:
    result = Result(content=list(CONTENT), meta={"k": [1]}, request_id="r")
    back = result_from_json(result_json(result))
    assert back.content == CONTENT and back.meta == {"k": [1]}


def test_the_documented_shapes() -> None:
    link = Resource("file:///a.pdf", "a.pdf", mime_type="application/pdf", size=3, meta={"m": 1})
    embedded = Resource("memo://1", mime_type="text/plain", embedded=True, text="hi")
    document = json.loads(result_json(Result(content=[Text("t", {"priority": 1.0}), link, embedded])))
    assert document["content"] == [
        {"type": "text", "text": "t", "annotations": {"priority": 1.0}},
        {
            "type": "resource_link",
            "uri": "file:///a.pdf",
            "name": "a.pdf",
            "mime_type": "application/pdf",
            "size": 3,
            "meta": {"m": 1},
        },
        {"type": "resource", "uri": "memo://1", "mime_type": "text/plain", "text": "hi"},
    ]
    # No `meta` key for a result without one: the shape callers know is unchanged.
    assert "meta" not in document
