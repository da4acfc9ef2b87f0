"""A Result as the JSON document HTTP callers read (and `toolmesh invoke` prints).

Written by splicing the JSON that runtimes already produced into the document, so
structured output is never parsed and re-serialised on the hot path.
"""

from __future__ import annotations

import base64
import json
import math
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

from toolmesh.runtimes.functions.results import Content, Json, Resource, Result, Text, result_from_document


def _extras(item: Content) -> bytes:
    """`,"annotations":{...},"meta":{...}` for what the item has of them."""
    parts = b""
    if item.annotations:
        parts += b',"annotations":' + json.dumps(item.annotations).encode()
    if item.meta:
        parts += b',"meta":' + json.dumps(item.meta).encode()
    return parts


def _resource(item: Resource) -> dict[str, Any]:
    document: dict[str, Any] = {"type": "resource" if item.embedded else "resource_link", "uri": item.uri}
    for key, value in (
        ("name", item.name),
        ("title", item.title),
        ("description", item.description),
        ("mime_type", item.mime_type),
    ):
        if value:
            document[key] = value
    if item.size is not None:
        document["size"] = item.size
    if item.text is not None:
        document["text"] = item.text
    elif item.blob is not None:
        document["blob"] = base64.b64encode(item.blob).decode()
    return document


def content_json(item: Content) -> bytes:
    if type(item) is Text and item.annotations is None and item.meta is None:
        return b'{"type":"text","text":' + json.dumps(item.text).encode() + b"}"
    if isinstance(item, Text):
        return b'{"type":"text","text":' + json.dumps(item.text).encode() + _extras(item) + b"}"
    if isinstance(item, Json):
        return b'{"type":"json","json":' + item.data + _extras(item) + b"}"
    if isinstance(item, Resource):
        return json.dumps(_resource(item)).encode()[:-1] + _extras(item) + b"}"
    data = base64.b64encode(item.data)
    return (
        b'{"type":"binary","mime_type":'
        + json.dumps(item.mime_type).encode()
        + b',"data":"'
        + data
        + b'"'
        + _extras(item)
        + b"}"
    )


def _timing(queued_ms: float, duration_ms: float) -> bytes:
    """`json.dumps({"queued_ms": ..., "duration_ms": ...})`, written out: a number's JSON is its
    repr (json's own rule) except for NaN and infinities, left to json."""
    if math.isfinite(queued_ms) and math.isfinite(duration_ms):
        return f'{{"queued_ms": {queued_ms!r}, "duration_ms": {duration_ms!r}}}'.encode()
    return json.dumps({"queued_ms": queued_ms, "duration_ms": duration_ms}).encode()


def result_json(result: Result) -> bytes:
    """`{"is_error", "content", "structured", "request_id", "timing", "error"?, "meta"?}` as bytes."""
    parts = [
        b'{"is_error":',
        b"true" if result.is_error else b"false",
        b',"content":[',
        b",".join(content_json(item) for item in result.content),
        b'],"structured":',
        result.structured_json if result.structured_json is not None else b"null",
        b',"request_id":',
        _quote(result.request_id).encode(),  # what json.dumps does for a str, without its layers
        b',"timing":',
        _timing(round(result.queued_ms, 3), round(result.duration_ms, 3)),
    ]
    if result.error is not None:
        error = {
            "code": result.error.code,
            "message": result.error.message,
            "violations": [v.to_dict() for v in result.error.violations],
        }
        if result.error.traceback:
            error["traceback"] = result.error.traceback
        parts += [b',"error":', json.dumps(error).encode()]
    if result.meta:
        parts += [b',"meta":', json.dumps(result.meta).encode()]
    parts.append(b"}")
    return b"".join(parts)


def result_from_json(document: bytes) -> Result:
    """The inverse of `result_json`, for a result kept as its document (a job's)."""
    return result_from_document(json.loads(document))
