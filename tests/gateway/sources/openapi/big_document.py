"""A generated document of realistic size, as code generators write them: many resources, each
with list/create/get/update/delete, shared schemas referring to each other, path-level parameters,
tags, duplicate and missing operationIds, unicode in names."""

from __future__ import annotations

from typing import Any


def big_document(resources: int = 120) -> dict[str, Any]:
    """`resources` resources of five operations each, plus a few oddities (about 5 x resources)."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {
        "Page": {
            "type": "object",
            "properties": {"next": {"type": ["string", "null"]}, "total": {"type": "integer"}},
        },
        "Error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
    }
    for n in range(resources):
        name = f"Resource{n}"
        other = f"Resource{(n + 1) % resources}"
        schemas[name] = {
            "type": "object",
            "required": ["id", "name"],
            "properties": {
                "id": {"type": "string", "readOnly": True},
                "name": {"type": "string", "description": f"The {name}'s name."},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "related": {"type": "array", "items": {"$ref": f"#/components/schemas/{other}"}},
                "created": {"type": "string", "format": "date-time", "readOnly": True},
            },
        }
        one = {"$ref": f"#/components/schemas/{name}"}
        json_of = {"application/json": {"schema": one}}
        error = {
            "description": "error",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        tag = f"group{n % 12}"
        paths[f"/v1/resource{n}"] = {
            "get": {
                "operationId": f"list_resource{n}",
                "tags": [tag],
                "parameters": [
                    {"name": "page[size]", "in": "query", "schema": {"type": "integer"}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "a page",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "allOf": [
                                        {"$ref": "#/components/schemas/Page"},
                                        {
                                            "type": "object",
                                            "properties": {"items": {"type": "array", "items": one}},
                                        },
                                    ]
                                }
                            }
                        },
                    },
                    "default": error,
                },
            },
            "post": {
                "operationId": f"create_resource{n}",
                "tags": [tag],
                "requestBody": {"required": True, "content": json_of},
                "responses": {"201": {"description": "made", "content": json_of}, "default": error},
            },
        }
        paths[f"/v1/resource{n}/{{id}}"] = {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {
                "operationId": f"get_resource{n}",
                "tags": [tag],
                "responses": {"200": {"description": "one", "content": json_of}},
            },
            "patch": {
                "operationId": f"update_resource{n}",
                "tags": [tag, "writes"],
                "requestBody": {"content": {"application/merge-patch+json": {"schema": one}}},
                "responses": {"200": {"description": "one", "content": json_of}},
            },
            # No operationId: named by method and path.
            "delete": {"tags": [tag, "writes"], "responses": {"204": {"description": "gone"}}},
        }
    # Generators repeat ids and write them in other scripts.
    paths["/v1/dup/a"] = {"get": {"operationId": "getThing", "responses": {"204": {"description": "ok"}}}}
    paths["/v1/dup/b"] = {"get": {"operationId": "getThing", "responses": {"204": {"description": "ok"}}}}
    paths["/v1/ünïcode"] = {
        "get": {"operationId": "récupérer_données", "responses": {"204": {"description": "ok"}}}
    }
    paths["/v1/chinese"] = {"get": {"operationId": "获取用户", "responses": {"204": {"description": "ok"}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "big", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/api"}],
        "paths": paths,
        "components": {"schemas": schemas},
    }
