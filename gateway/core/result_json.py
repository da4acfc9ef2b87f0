"""A Result as the JSON document HTTP callers read (and `toolmesh invoke` prints).

Written by splicing the JSON that runtimes already produced into the document, so
structured output is never parsed and re-serialised on the hot path.
"""

from __future__ import annotations

import base64
import json
import math
from json.encoder import encode_basestring_ascii as _quote

from toolmesh.runtimes.functions.results import Binary, Content, Json, Result, Text, result_from_document


def content_json(item: Content) -> bytes:
    if isinstance(item, Text):
        return b'{"type":"text","text":' + json.dumps(item.text).encode() + b"}"
    if isinstance(item, Json):
        return b'{"type":"json","json":' + item.data + b"}"
    assert isinstance(item, Binary)
    data = base64.b64encode(item.data)
    return (
        b'{"type":"binary","mime_type":' + json.dumps(item.mime_type).encode() + b',"data":"' + data + b'"}'
    )


def _timing(queued_ms: float, duration_ms: float) -> bytes:
    """`json.dumps({"queued_ms": ..., "duration_ms": ...})`, written out: a number's JSON is its
    repr (json's own rule) except for NaN and infinities, left to json."""
    if math.isfinite(queued_ms) and math.isfinite(duration_ms):
        return f'{{"queued_ms": {queued_ms!r}, "duration_ms": {duration_ms!r}}}'.encode()
    return json.dumps({"queued_ms": queued_ms, "duration_ms": duration_ms}).encode()


def result_json(result: Result) -> bytes:
    """`{"is_error", "content", "structured", "request_id", "timing", "error"?}` as bytes."""
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
    parts.append(b"}")
    return b"".join(parts)


def result_from_json(document: bytes) -> Result:
    """The inverse of `result_json`, for a result kept as its document (a job's)."""
    return result_from_document(json.loads(document))
