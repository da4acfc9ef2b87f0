"""Request bodies in: size and depth limits, JSON that must be an object."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from toolmesh.errors import InvalidRequest, PayloadTooLarge


async def read_body(chunks: AsyncIterator[bytes], content_length: str | None, limit: int) -> bytes:
    """The whole body, or PayloadTooLarge as soon as it is known to exceed `limit`."""
    check_length(content_length, limit)
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def check_length(content_length: str | None, limit: int) -> None:
    """PayloadTooLarge if a request's Content-Length says its body exceeds `limit`."""
    if content_length is not None and content_length.isdigit() and int(content_length) > limit:
        raise _too_large(limit)


def whole_body(body: bytes, limit: int) -> bytes:
    """`body`, all of it received at once, or PayloadTooLarge if it exceeds `limit`."""
    if len(body) > limit:
        raise _too_large(limit)
    return body


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
