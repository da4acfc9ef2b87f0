"""What a result and a spec carry survives the protobuf contract (toolmesh/protocol/wire.py):
every content kind with its annotations and `_meta`, a result's and a tool's `_meta`, a prompt's
own name."""

from __future__ import annotations

from toolmesh.protocol import wire
from toolmesh.runtimes.functions.results import Binary, Json, Resource, Result, Text
from toolmesh.runtimes.functions.spec import PROMPT, Feature, FunctionSpec
from toolmesh.v1 import invoke_pb2

CONTENT = [
    Text("plain"),
    Text(
        "annotated", {"audience": ["user"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"}, {"a": 1}
    ),
    Json(b'{"k":1}', {"priority": 1}),
    Binary(b"\x89PNG", "image/png", None, {"b": [1]}),
    Resource("file:///a.pdf", "a.pdf", "A", "a report", "application/pdf", 0, annotations={"priority": 0.1}),
    Resource("memo://1", mime_type="text/plain", embedded=True, text=""),
    Resource("memo://2", embedded=True, blob=b"\x00\x01"),
    Resource("memo://3", embedded=True),
]


def test_every_kind_of_content_and_the_results_meta_cross_the_wire() -> None:
    result = Result(content=list(CONTENT), meta={"ui": {"resourceUri": "ui://a"}}, request_id="r")
    back = wire.result_from_proto(
        invoke_pb2.InvokeResponse.FromString(wire.result_to_proto(result).SerializeToString())
    )
    assert back.content == CONTENT
    assert back.meta == {"ui": {"resourceUri": "ui://a"}}
    assert wire.result_from_proto(wire.result_to_proto(Result(content=[Text("x")]))).meta is None


def test_streamed_items_keep_what_they_carry() -> None:
    messages = wire.stream_messages(list(CONTENT))
    assert [wire.content_from_proto(m.content) for m in messages] == CONTENT


def test_a_tools_meta_and_a_prompts_own_name_cross_the_wire() -> None:
    tool = FunctionSpec(
        "show", "", {"type": "object"}, namespace="apps", meta={"ui": {"resourceUri": "ui://v"}}
    )
    prompt = FunctionSpec(
        "fetch_1", "", {"type": "object"}, namespace="apps", feature=Feature(PROMPT, name="fetch")
    )
    assert wire.spec_from_proto(wire.spec_to_proto(tool)) == tool
    assert wire.spec_from_proto(wire.spec_to_proto(prompt)) == prompt
    assert wire.spec_from_proto(wire.spec_to_proto(FunctionSpec("f", "", {}))).meta is None
