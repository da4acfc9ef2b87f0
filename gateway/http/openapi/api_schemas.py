"""The pieces every part of the OpenAPI document shares: references, JSON bodies, error
responses and the component schemas."""

from __future__ import annotations

from typing import Any

from toolmesh.errors import ERROR_CLASSES

REF = "#/components/schemas/"


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


def json_body(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def errors(*statuses: int) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for cls in ERROR_CLASSES:
        by_status.setdefault(cls.http_status, []).append(cls.code)
    return {
        str(status): json_body(
            ref("Error"), "error codes: " + ", ".join(by_status.get(status, ["(see Error)"]))
        )
        for status in statuses
    }


COMMON_ERRORS = (400, 401, 403, 429)

#: What any content item may carry from an MCP server (docs/http.md#results).
_EXTRAS = {
    "annotations": {"type": "object", "description": "MCP annotations: audience, priority, lastModified."},
    "meta": {"type": "object", "description": "The item's MCP `_meta`."},
}


def _item(kind: str, required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", *required],
        "properties": {"type": {"const": kind}, **properties, **_EXTRAS},
    }


SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["type", "code", "message"],
                "properties": {
                    "type": {"type": "string"},
                    "code": {"type": "string", "enum": sorted(cls.code for cls in ERROR_CLASSES)},
                    "message": {"type": "string"},
                    "param": {"type": ["string", "null"]},
                    "violations": {"type": "array", "items": ref("Violation")},
                    "suggestions": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    },
    "Violation": {
        "type": "object",
        "required": ["path", "expected", "got", "message"],
        "properties": {k: {"type": "string"} for k in ("path", "expected", "got", "message")},
    },
    "Function": {
        "type": "object",
        "required": ["name", "namespace", "description", "parameters"],
        "properties": {
            "name": {"type": "string", "description": "Qualified name."},
            "namespace": {"type": "string"},
            "description": {"type": "string"},
            "parameters": {"type": "object", "description": "JSON Schema of the arguments."},
            "output_schema": {"type": ["object", "null"]},
            "annotations": {
                "type": "object",
                "properties": {
                    "read_only": {"type": "boolean"},
                    "destructive": {"type": "boolean"},
                    "idempotent": {"type": "boolean"},
                    "open_world": {"type": "boolean"},
                    "title": {"type": "string"},
                },
            },
            "timeout": {"type": ["number", "null"]},
            "streaming": {"type": "boolean"},
            "version": {"type": "string"},
            "meta": {"type": "object", "description": "The tool's MCP `_meta`, from an MCP server."},
        },
    },
    "Content": {
        "oneOf": [
            _item("text", ["text"], {"text": {"type": "string"}}),
            _item("json", ["json"], {"json": {}}),
            _item(
                "binary",
                ["mime_type", "data"],
                {"mime_type": {"type": "string"}, "data": {"type": "string", "contentEncoding": "base64"}},
            ),
            _item(
                "resource_link",
                ["uri"],
                {
                    "uri": {"type": "string"},
                    "name": {"type": "string"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "mime_type": {"type": "string"},
                    "size": {"type": "integer"},
                },
            ),
            _item(
                "resource",
                ["uri"],
                {
                    "uri": {"type": "string"},
                    "mime_type": {"type": "string"},
                    "text": {"type": "string"},
                    "blob": {"type": "string", "contentEncoding": "base64"},
                },
            ),
        ]
    },
    "Result": {
        "type": "object",
        "required": ["is_error", "content", "structured"],
        "properties": {
            "is_error": {"type": "boolean", "description": "True when the function itself failed."},
            "content": {"type": "array", "items": ref("Content")},
            "structured": {"description": "The structured result, or null."},
            "request_id": {"type": "string"},
            "meta": {"type": "object", "description": "The result's MCP `_meta`, from an MCP server."},
            "timing": {
                "type": "object",
                "properties": {"queued_ms": {"type": "number"}, "duration_ms": {"type": "number"}},
            },
            "error": {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "violations": {"type": "array", "items": ref("Violation")},
                },
            },
        },
    },
}
