"""JSON Schema of a protobuf message, as protobuf's JSON mapping writes and reads it
(`google.protobuf.json_format`): fields by their JSON names (lowerCamelCase or `json_name`).

Scalars (64-bit integers as strings or integers, floats as numbers or "NaN"/"Infinity"), enums
(their value names), repeated fields (arrays), maps (objects, non-string keys as strings), nested
messages (`$defs`, so recursive ones are written once), oneof members as optional fields that say
which others they exclude, proto2 `required` and defaults, deprecated fields, and the well-known
types as their JSON forms (well_known_schemas.py).
"""

from __future__ import annotations

import base64
import math
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from toolmesh.gateway.sources.grpc_reflection.well_known_schemas import (
    FLOATING,
    NULL_VALUE,
    OBJECT_WELL_KNOWN,
    WELL_KNOWN,
    WRAPPED_REQUEST_FIELD,
    integer,
    long,
)

_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_INT32: integer(32, signed=True),
    FieldDescriptor.TYPE_SINT32: integer(32, signed=True),
    FieldDescriptor.TYPE_SFIXED32: integer(32, signed=True),
    FieldDescriptor.TYPE_UINT32: integer(32, signed=False),
    FieldDescriptor.TYPE_FIXED32: integer(32, signed=False),
    FieldDescriptor.TYPE_INT64: long(signed=True),
    FieldDescriptor.TYPE_SINT64: long(signed=True),
    FieldDescriptor.TYPE_SFIXED64: long(signed=True),
    FieldDescriptor.TYPE_UINT64: long(signed=False),
    FieldDescriptor.TYPE_FIXED64: long(signed=False),
    FieldDescriptor.TYPE_DOUBLE: FLOATING,
    FieldDescriptor.TYPE_FLOAT: FLOATING,
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "contentEncoding": "base64"},
}
#: What a map's keys look like, by the key field's type: JSON object keys are always strings.
_SIGNED_KEY = {"pattern": r"^-?\d+$"}
_UNSIGNED_KEY = {"pattern": r"^\d+$"}
_KEYS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_INT32: _SIGNED_KEY,
    FieldDescriptor.TYPE_SINT32: _SIGNED_KEY,
    FieldDescriptor.TYPE_SFIXED32: _SIGNED_KEY,
    FieldDescriptor.TYPE_INT64: _SIGNED_KEY,
    FieldDescriptor.TYPE_SINT64: _SIGNED_KEY,
    FieldDescriptor.TYPE_SFIXED64: _SIGNED_KEY,
    FieldDescriptor.TYPE_UINT32: _UNSIGNED_KEY,
    FieldDescriptor.TYPE_FIXED32: _UNSIGNED_KEY,
    FieldDescriptor.TYPE_UINT64: _UNSIGNED_KEY,
    FieldDescriptor.TYPE_FIXED64: _UNSIGNED_KEY,
    FieldDescriptor.TYPE_BOOL: {"enum": ["true", "false"]},
}


def request_schema(message: Descriptor) -> dict[str, Any]:
    """The JSON Schema of a method's arguments: its request message, an object. A well-known
    type whose JSON is not an object (a Timestamp, a wrapper...) is the object's one property
    `value` (json_mapping.py reads it so)."""
    known = WELL_KNOWN.get(message.full_name)
    if known is not None and message.full_name not in OBJECT_WELL_KNOWN:
        return {
            "type": "object",
            "properties": {WRAPPED_REQUEST_FIELD: known},
            "required": [WRAPPED_REQUEST_FIELD],
        }
    return message_schema(message)


def message_schema(message: Descriptor) -> dict[str, Any]:
    """The JSON Schema of `message` as the mapping writes it (a well-known type its JSON form,
    any other an object), with `$defs` for the messages it holds."""
    known = WELL_KNOWN.get(message.full_name)
    if known is not None:
        return dict(known)
    definitions: dict[str, dict[str, Any]] = {}
    schema = _object(message, definitions)
    if definitions:
        schema["$defs"] = definitions
    return schema


def _object(message: Descriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in message.fields:
        schema = _field(field, definitions)
        oneof = field.containing_oneof
        if oneof is not None and not _synthetic(field):
            others = ", ".join(f.json_name for f in oneof.fields)
            # A description, not `oneOf`/`not` combinators, which function-calling schemas refuse.
            schema = {**schema, "description": f"At most one of {others} (oneof {oneof.name})."}
        if field.GetOptions().deprecated:
            schema = {**schema, "deprecated": True}
        properties[field.json_name] = schema
        if field.is_required:
            required.append(field.json_name)
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _synthetic(field: FieldDescriptor) -> bool:
    """A proto3 `optional` field's oneof of one, which is no choice."""
    oneof = field.containing_oneof
    return oneof is not None and len(oneof.fields) == 1 and oneof.name.startswith("_")


def _field(field: FieldDescriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key = message.fields_by_name["key"]
        value = _single(message.fields_by_name["value"], definitions)
        schema = {"type": "object", "additionalProperties": value}
        if key.type in _KEYS:
            schema["propertyNames"] = dict(_KEYS[key.type])
        return schema
    single = _single(field, definitions)
    if field.is_repeated:
        return {"type": "array", "items": single}
    if field.has_default_value and message is None:
        single["default"] = _default(field)
    return single


def _single(field: FieldDescriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    enum = field.enum_type
    if enum is not None:
        if enum.full_name == "google.protobuf.NullValue":
            return dict(NULL_VALUE)
        # Names are what the mapping writes; it reads numbers too, not said here.
        return {"type": "string", "enum": [value.name for value in enum.values]}
    message = field.message_type
    if message is None:
        return dict(_SCALARS.get(field.type, {}))
    known = WELL_KNOWN.get(message.full_name)
    if known is not None:
        return dict(known)
    name = message.full_name
    if name not in definitions:
        definitions[name] = {}  # taken before filling it: a message that holds itself refers to it
        definitions[name] = _object(message, definitions)
    return {"$ref": f"#/$defs/{name}"}


def _default(field: FieldDescriptor) -> Any:
    """A proto2 field's explicit default, as the mapping would write it."""
    value = field.default_value
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if field.cpp_type in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value
