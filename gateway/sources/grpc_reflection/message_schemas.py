"""JSON Schema of a protobuf message, as protobuf's JSON mapping writes and reads it
(`google.protobuf.json_format`, with the fields' own names).

Scalars, enums (their value names), repeated fields (arrays), maps (objects), nested messages
(`$defs`, so recursive ones are written once), oneof members as plain optional fields, and the
well-known types as their JSON forms: Timestamp and Duration strings, Struct objects, wrappers
their scalar.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

_INTEGER = {"type": "integer"}
#: 64-bit integers: JSON numbers lose precision past 2^53, so the mapping writes them as strings
#: and reads either.
_LONG = {"type": ["integer", "string"], "pattern": r"^-?\d+$"}
_NUMBER = {"type": "number"}
_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_INT32: _INTEGER,
    FieldDescriptor.TYPE_SINT32: _INTEGER,
    FieldDescriptor.TYPE_SFIXED32: _INTEGER,
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "minimum": 0},
    FieldDescriptor.TYPE_FIXED32: {"type": "integer", "minimum": 0},
    FieldDescriptor.TYPE_INT64: _LONG,
    FieldDescriptor.TYPE_SINT64: _LONG,
    FieldDescriptor.TYPE_SFIXED64: _LONG,
    FieldDescriptor.TYPE_UINT64: _LONG,
    FieldDescriptor.TYPE_FIXED64: _LONG,
    FieldDescriptor.TYPE_DOUBLE: _NUMBER,
    FieldDescriptor.TYPE_FLOAT: _NUMBER,
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "contentEncoding": "base64"},
}
_WRAPPERS: dict[str, dict[str, Any]] = {
    "google.protobuf.DoubleValue": _NUMBER,
    "google.protobuf.FloatValue": _NUMBER,
    "google.protobuf.Int64Value": _LONG,
    "google.protobuf.UInt64Value": _LONG,
    "google.protobuf.Int32Value": _INTEGER,
    "google.protobuf.UInt32Value": {"type": "integer", "minimum": 0},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BytesValue": {"type": "string", "contentEncoding": "base64"},
}
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {
        "type": "string",
        "pattern": r"^-?\d+(\.\d{1,9})?s$",
        "description": 'Seconds with an "s", e.g. "1.5s".',
    },
    "google.protobuf.FieldMask": {"type": "string", "description": "Comma-separated field paths."},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Empty": {"type": "object", "properties": {}},
    "google.protobuf.Any": {
        "type": "object",
        "properties": {"@type": {"type": "string"}},
        "required": ["@type"],
    },
    **_WRAPPERS,
}


def message_schema(message: Descriptor) -> dict[str, Any]:
    """The JSON Schema of `message` (an object), with `$defs` for the messages it holds."""
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
            others = ", ".join(f.name for f in oneof.fields if f is not field)
            schema = {**schema, "description": f"At most one of {field.name}, {others}."}
        properties[field.name] = schema
        if field.is_required:
            required.append(field.name)
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
        value = _single(message.fields_by_name["value"], definitions)
        return {"type": "object", "additionalProperties": value}
    single = _single(field, definitions)
    return {"type": "array", "items": single} if field.is_repeated else single


def _single(field: FieldDescriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if field.enum_type is not None:
        return {"type": "string", "enum": [value.name for value in field.enum_type.values]}
    message = field.message_type
    if message is None:
        return dict(_SCALARS.get(field.type, {}))
    known = _WELL_KNOWN.get(message.full_name)
    if known is not None:
        return dict(known)
    name = message.full_name
    if name not in definitions:
        definitions[name] = {}  # taken before filling it: a message that holds itself refers to it
        definitions[name] = _object(message, definitions)
    return {"$ref": f"#/$defs/{name}"}
