"""Request bodies in, JSON bytes out: size and depth limits, and results as JSON.

Results are written by splicing the JSON that runtimes already produced into
the response, so structured output is never parsed and re-serialised on the hot path.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

from toolmesh.errors import InvalidRequest, PayloadTooLarge
from toolmesh.runtimes.functions.results import Binary, Content, Json, Result, Text


async def read_body(chunks: AsyncIterator[bytes], content_length: str | None, limit: int) -> bytes:
    """The whole body, or PayloadTooLarge as soon as it is known to exceed `limit`."""
    if content_length is not None and content_length.isdigit() and int(content_length) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"request body is larger than the limit of {limit} bytes", param="body")


def parse_json(body: bytes, max_depth: int) -> Any:
    """Decode a JSON body, refusing malformed or too deeply nested documents."""
    if not body.strip():
        raise InvalidRequest("request body is empty; send a JSON document", param="body")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", param="body"
        ) from None
    except RecursionError:
        raise InvalidRequest(f"request body nests deeper than {max_depth} levels", param="body") from None
    except UnicodeDecodeError:
        raise InvalidRequest("request body is not UTF-8", param="body") from None
    if _depth_exceeds(value, max_depth):
        raise InvalidRequest(f"request body nests deeper than {max_depth} levels", param="body")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def arguments_body(body: bytes, max_depth: int) -> bytes:
    """Check that a body is one JSON object (the arguments) and pass its bytes on as they are."""
    if not body.strip():
        return b"{}"
    value = parse_json(body, max_depth)
    if not isinstance(value, dict):
        raise InvalidRequest(
            f"the body must be the arguments as a JSON object, got {_kind(value)}", param="body"
        )
    return body


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


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
        json.dumps(result.request_id).encode(),
        b',"timing":',
        json.dumps(
            {"queued_ms": round(result.queued_ms, 3), "duration_ms": round(result.duration_ms, 3)}
        ).encode(),
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
