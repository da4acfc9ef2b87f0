"""The JSON Schemas of protobuf's scalars and well-known types as the JSON mapping writes them
(https://protobuf.dev/programming-guides/json/), for message_schemas.py."""

from __future__ import annotations

from typing import Any

#: Floats and doubles: numbers, or the strings the mapping writes for the values JSON lacks.
FLOATING: dict[str, Any] = {"type": ["number", "string"], "pattern": "^(NaN|-?Infinity)$"}
#: google.protobuf.NullValue: JSON null.
NULL_VALUE: dict[str, Any] = {"type": "null"}
#: A request whose message is a well-known type that is no JSON object is `{"value": ...}`.
WRAPPED_REQUEST_FIELD = "value"


def integer(bits: int, *, signed: bool) -> dict[str, Any]:
    """A 32-bit integer, with its range."""
    if signed:
        return {"type": "integer", "minimum": -(2 ** (bits - 1)), "maximum": 2 ** (bits - 1) - 1}
    return {"type": "integer", "minimum": 0, "maximum": 2**bits - 1}


def long(*, signed: bool) -> dict[str, Any]:
    """A 64-bit integer: JSON numbers lose precision past 2^53, so the mapping writes them as
    strings, and reads either."""
    if signed:
        return {"type": ["integer", "string"], "pattern": r"^-?\d+$"}
    return {"type": ["integer", "string"], "pattern": r"^\d+$", "minimum": 0}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """A wrapper: its scalar, or null for none (what the wrapper is there to tell apart)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return {**schema, "type": [*kinds, "null"]}


_WRAPPERS: dict[str, dict[str, Any]] = {
    "google.protobuf.DoubleValue": _nullable(FLOATING),
    "google.protobuf.FloatValue": _nullable(FLOATING),
    "google.protobuf.Int64Value": _nullable(long(signed=True)),
    "google.protobuf.UInt64Value": _nullable(long(signed=False)),
    "google.protobuf.Int32Value": _nullable(integer(32, signed=True)),
    "google.protobuf.UInt32Value": _nullable(integer(32, signed=False)),
    "google.protobuf.BoolValue": {"type": ["boolean", "null"]},
    "google.protobuf.StringValue": {"type": ["string", "null"]},
    "google.protobuf.BytesValue": {"type": ["string", "null"], "contentEncoding": "base64"},
}
#: Well-known types whose JSON is an object: a request of one is the arguments themselves.
OBJECT_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Empty": {"type": "object", "properties": {}},
    "google.protobuf.Any": {
        "type": "object",
        "properties": {
            "@type": {
                "type": "string",
                "description": 'The message\'s type: "type.googleapis.com/" and its full name; its fields '
                'beside it (a well-known type\'s JSON in "value").',
            }
        },
        "required": ["@type"],
    },
}
WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {
        "type": "string",
        "pattern": r"^-?\d+(\.\d{1,9})?s$",
        "description": 'Seconds with an "s", e.g. "1.5s".',
    },
    "google.protobuf.FieldMask": {
        "type": "string",
        "description": 'Comma-separated field paths by their JSON names, e.g. "name,address.city".',
    },
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    **OBJECT_WELL_KNOWN,
    **_WRAPPERS,
}
