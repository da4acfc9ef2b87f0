"""Request bodies: JSON, urlencoded and multipart forms, text, raw bytes (in base64 as arguments).

A form's fields are the body object's properties: text as it is, numbers and booleans as JSON
text, arrays as one field per item, objects as JSON (a part of type `application/json` in a
multipart form). A binary field (see operations.py) arrives in base64 and is sent as its bytes:
in a multipart form a file part named after the field, of the media type the document gives.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

from toolmesh.errors import InvalidArguments, Violation
from toolmesh.gateway.sources.openapi.operations import FORM, MULTIPART, Operation, is_json, is_text
from toolmesh.gateway.sources.openapi.parameters import text


def encode(operation: Operation, body: Any) -> tuple[bytes, str]:
    """The body's bytes and its Content-Type header."""
    if operation.body_media == FORM:
        pairs = [(name, value) for name, value, _ in _fields(operation, body)]
        return urlencode(pairs).encode(), FORM
    if operation.body_media == MULTIPART:
        return _multipart(_fields(operation, body))
    if is_json(operation.body_media):
        return json.dumps(body).encode(), operation.body_media
    if is_text(operation.body_media):
        charset = "; charset=utf-8" if operation.body_media.startswith("text/") else ""
        return text(body).encode(), operation.body_media + charset
    return _decoded(operation, "body", body), operation.body_media


def _fields(operation: Operation, body: Any) -> Iterator[tuple[str, str | bytes, str | None]]:
    """(name, value, the media type of a file part or of a JSON part, else None) per form field."""
    if not isinstance(body, Mapping):
        raise InvalidArguments(
            f"{operation.spec.qualified_name}: the form must be an object",
            [Violation("body", "an object", type(body).__name__, "the form must be an object")],
        )
    for name, value in body.items():
        for item in value if isinstance(value, list) else [value]:
            if name in operation.binary:
                yield name, _decoded(operation, name, item), operation.binary[name]
            elif isinstance(item, (dict, list)):
                yield name, json.dumps(item), "application/json"
            else:
                yield name, text(item), None


def _decoded(operation: Operation, name: str, value: Any) -> bytes:
    try:
        if not isinstance(value, str):
            raise ValueError
        return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error):
        message = f"argument {name!r} must be bytes in base64"
        raise InvalidArguments(
            f"{operation.spec.qualified_name}: {message}",
            [Violation(name, "base64 text", type(value).__name__, message)],
        ) from None


def _multipart(fields: Iterator[tuple[str, str | bytes, str | None]]) -> tuple[bytes, str]:
    boundary = os.urandom(16).hex()
    out = bytearray()
    for name, value, media_type in fields:
        disposition = f'form-data; name="{_quoted(name)}"'
        if isinstance(value, bytes):
            disposition += f'; filename="{_quoted(name)}"'
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()
        if media_type is not None:
            out += f"Content-Type: {media_type}\r\n".encode()
        out += b"\r\n" + (value if isinstance(value, bytes) else value.encode()) + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"{MULTIPART}; boundary={boundary}"


def _quoted(name: str) -> str:
    # As browsers write a field's name: the characters that would end the header escaped.
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
