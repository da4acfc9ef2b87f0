"""An MCP server's answers as toolmesh's (runtimes/mcp/mcp_content.py), the one conversion of
both roads: what passes of a `_meta`, what a broken item becomes, what a function returns."""

from __future__ import annotations

from toolmesh.runtimes.functions.results import Binary, Json, Resource, Text, WithContent, normalise
from toolmesh.runtimes.mcp.mcp_content import content_item, passed_meta, tool_error, tool_value


def test_the_gateways_own_meta_keys_stay_behind() -> None:
    assert passed_meta({"progressToken": 3, "io.modelcontextprotocol/related-task": {"taskId": "t"}}) is None
    assert passed_meta({"progressToken": 3, "ui": {"resourceUri": "ui://a"}}) == {
        "ui": {"resourceUri": "ui://a"}
    }
    assert passed_meta({}) is None and passed_meta("nonsense") is None


def test_items_keep_their_kind_and_broken_ones_are_their_json() -> None:
    assert content_item(
        {"type": "image", "data": "iVBO", "mimeType": "image/png", "annotations": {"priority": 1}}
    ) == (Binary(b"\x89PNG"[:3], "image/png", {"priority": 1}))
    assert content_item({"type": "resource_link", "uri": "a://b", "name": "b", "size": True}) == Resource(
        "a://b", "b"
    )
    assert content_item({"type": "resource", "resource": {"uri": "a://b", "blob": "AAE="}}) == Resource(
        "a://b", embedded=True, blob=b"\x00\x01"
    )
    assert content_item({"type": "image", "data": "not base64!"}) == Text(
        '{"type":"image","data":"not base64!"}'
    )
    assert content_item({"type": "resource_link"}) == Text('{"type":"resource_link"}')
    assert content_item({"type": "video", "uri": "x"}) == Text('{"type":"video","uri":"x"}')


def test_what_a_function_returns() -> None:
    text = {"type": "text", "text": '{"a":1}'}
    assert tool_value({"content": [text], "structuredContent": {"a": 1}}) == {"a": 1}
    meta = tool_value({"content": [text], "structuredContent": {"a": 1}, "_meta": {"m": 1}})
    assert meta == WithContent({"a": 1}, [Json(b'{"a":1}')], {"m": 1})
    assert normalise(meta) == ([Json(b'{"a":1}')], b'{"a":1}')
    assert tool_value({"content": [{"type": "text", "text": "hi"}], "_meta": {"m": 1}}) == WithContent(
        None, [Text("hi")], {"m": 1}
    )
    assert tool_value({"content": []}) is None
    assert tool_error({"isError": True, "content": [text]}) == '{"a":1}'
    assert tool_error(None) == "the server answered tools/call with no result"
    assert tool_error({"content": []}) is None
