"""The OpenAPI 3.1 document of the HTTP API, served at /openapi.json."""

from __future__ import annotations

from typing import Any

from toolmesh.config_defaults import DEFAULT_MAX_PROMPT_CHARS
from toolmesh.errors import ERROR_CLASSES
from toolmesh.gateway.core.requests import MAX_K
from toolmesh.gateway.http.job_routes import job_openapi
from toolmesh.router.sessions import MAX_SESSION_ID

_REF = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _json_body(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for cls in ERROR_CLASSES:
        by_status.setdefault(cls.http_status, []).append(cls.code)
    return {
        str(status): _json_body(
            _ref("Error"), "error codes: " + ", ".join(by_status.get(status, ["(see Error)"]))
        )
        for status in statuses
    }


_COMMON = (400, 401, 403, 429)
#: One group of a Prometheus HTTP service discovery answer.
_TARGET_GROUP = {
    "type": "object",
    "required": ["targets", "labels"],
    "properties": {
        "targets": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
_NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "Qualified name (`namespace.name`) or tool name (`namespace__name`).",
    "schema": {"type": "string"},
}
_REQUEST_HEADERS = [
    {"name": "X-Request-Id", "in": "header", "required": False, "schema": {"type": "string"}},
    {"name": "X-Session-Id", "in": "header", "required": False, "schema": {"type": "string"}},
]

_SCHEMAS: dict[str, Any] = {
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
                    "violations": {"type": "array", "items": _ref("Violation")},
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
        },
    },
    "Content": {
        "oneOf": [
            {
                "type": "object",
                "required": ["type", "text"],
                "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
            },
            {
                "type": "object",
                "required": ["type", "json"],
                "properties": {"type": {"const": "json"}, "json": {}},
            },
            {
                "type": "object",
                "required": ["type", "mime_type", "data"],
                "properties": {
                    "type": {"const": "binary"},
                    "mime_type": {"type": "string"},
                    "data": {"type": "string", "contentEncoding": "base64"},
                },
            },
        ]
    },
    "Result": {
        "type": "object",
        "required": ["is_error", "content", "structured"],
        "properties": {
            "is_error": {"type": "boolean", "description": "True when the function itself failed."},
            "content": {"type": "array", "items": _ref("Content")},
            "structured": {"description": "The structured result, or null."},
            "request_id": {"type": "string"},
            "timing": {
                "type": "object",
                "properties": {"queued_ms": {"type": "number"}, "duration_ms": {"type": "number"}},
            },
            "error": {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "violations": {"type": "array", "items": _ref("Violation")},
                },
            },
        },
    },
}


def openapi_document(max_prompt_chars: int = DEFAULT_MAX_PROMPT_CHARS) -> dict[str, Any]:
    """The gateway's OpenAPI document; prompts are limited to `[router] max_prompt_chars`."""
    paths: dict[str, Any] = {
        "/v1/functions": {
            "get": {
                "summary": "List the functions the caller may call",
                "operationId": "listFunctions",
                "responses": {
                    "200": _json_body(
                        {
                            "type": "object",
                            "properties": {"functions": {"type": "array", "items": _ref("Function")}},
                        },
                        "The catalog",
                    ),
                    **_errors(401, 429),
                },
            }
        },
        "/v1/functions/{name}": {
            "get": {
                "summary": "Describe one function",
                "operationId": "getFunction",
                "parameters": [_NAME],
                "responses": {"200": _json_body(_ref("Function"), "The function"), **_errors(*_COMMON, 404)},
            }
        },
        "/v1/functions/{name}/invoke": {
            "post": {
                "summary": "Call a function",
                "description": (
                    "A function that raises is a 200 result with is_error; bad calls are errors. "
                    "With `Accept: text/event-stream` the answer is server-sent events: "
                    "`content` (a Content object) for each item as the function produces it, then "
                    "`result` (the Result; its content holds only what no `content` event carried) "
                    "or, for a call that fails after its first item, `error` (the Error envelope). "
                    "A call refused before its first item gets its HTTP error status as usual."
                ),
                "operationId": "invokeFunction",
                "parameters": [_NAME, *_REQUEST_HEADERS],
                "requestBody": {
                    "required": False,
                    "content": {
                        "application/json": {"schema": {"type": "object", "description": "The arguments."}}
                    },
                },
                "responses": {
                    "200": {
                        "description": "The result, or its event stream",
                        "content": {
                            "application/json": {"schema": _ref("Result")},
                            "text/event-stream": {
                                "schema": {
                                    "type": "string",
                                    "description": "`event: content|result|error` + `data: <JSON>` per event",
                                }
                            },
                        },
                    },
                    **_errors(*_COMMON, 404, 413, 422, 503, 504),
                },
            }
        },
        "/v1/tools": {
            "get": {
                "summary": "The catalog as LLM tool definitions",
                "operationId": "listTools",
                "parameters": [
                    {
                        "name": "format",
                        "in": "query",
                        "schema": {"enum": ["openai", "responses", "cloudflare", "mcp"], "default": "openai"},
                    },
                    {"name": "strict", "in": "query", "schema": {"type": "boolean", "default": False}},
                    {
                        "name": "query",
                        "in": "query",
                        "description": "Only the router's top tools for this text (503 without a router).",
                        "schema": {"type": "string", "maxLength": max_prompt_chars},
                    },
                    {"name": "k", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                ],
                "responses": {
                    "200": _json_body(
                        {
                            "type": "object",
                            "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                        },
                        "Tool definitions",
                    ),
                    **_errors(400, 401, 429),
                },
            }
        },
        "/v1/tool_calls": {
            "post": {
                "summary": "Execute a model's tool calls and answer in the same format",
                "description": (
                    "Accepts an OpenAI Chat assistant message, a chat completion, {tool_calls} or a bare "
                    "list of Chat tool calls; Responses API function_call items (or a response with output); "
                    "a Cloudflare/Hermes list of {name, arguments} or Workers AI's {tool_calls: [...]}; or "
                    "Hermes text with <tool_call> blocks. Calls run concurrently; one failing call yields an "
                    "error result for that call only."
                ),
                "operationId": "executeToolCalls",
                "parameters": _REQUEST_HEADERS,
                "requestBody": {"required": True, "content": {"application/json": {"schema": {}}}},
                "responses": {
                    "200": _json_body(
                        {"type": "object"}, "Tool messages, function_call_output items or results"
                    ),
                    **_errors(400, 401, 413, 429),
                },
            }
        },
        "/v1/chat/completions": {
            "post": {
                "summary": "OpenAI-compatible chat completion that runs the mesh's functions server-side",
                "description": (
                    "Forwards to the configured upstream model with the caller's functions added as tools, "
                    "runs the model's calls of them (in parallel, for up to [chat] max_rounds rounds) and "
                    "returns the final completion with a `toolmesh` record of the calls. Calls of the "
                    "client's own tools come back untouched; a turn mixing them with mesh calls comes "
                    "back whole, with the mesh calls' results in `toolmesh.tool_messages`. `stream: true` "
                    "streams every upstream round as Server-Sent Events as it arrives."
                ),
                "operationId": "createChatCompletion",
                "parameters": _REQUEST_HEADERS,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "responses": {
                    "200": _json_body(
                        {"type": "object"}, "A chat completion (or chunks as text/event-stream)"
                    ),
                    **_errors(400, 401, 413, 429, 503, 504),
                },
            }
        },
        "/v1/namespaces": {
            "get": {
                "summary": "Namespaces and a system message that introduces them",
                "operationId": "listNamespaces",
                "responses": {"200": _json_body({"type": "object"}, "Namespaces"), **_errors(401, 429)},
            }
        },
        "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "Alive"}}}},
        "/readyz": {
            "get": {
                "summary": "Readiness of each runtime (200 while the gateway serves, unless asked otherwise)",
                "parameters": [
                    {
                        "name": "runtime",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string"},
                        "description": "Answer 503 unless this runtime is ready.",
                    },
                    {
                        "name": "strict",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "boolean"},
                        "description": "Answer 503 unless every runtime is ready.",
                    },
                ],
                "responses": {
                    "200": {"description": "The gateway serves; the body says which runtimes are ready"},
                    "503": {"description": "The runtime asked for (or, strict, any runtime) is not ready"},
                    **_errors(400, 404),
                },
            }
        },
        "/metrics": {
            "get": {
                "summary": "The gateway's Prometheus metrics (a key needs the @metrics scope)",
                "responses": {"200": {"description": "Metrics"}, **_errors(401, 403)},
            }
        },
        "/v1/metrics/targets": {
            "get": {
                "summary": "Prometheus HTTP service discovery: the gateway and each live pod it runs",
                "responses": {
                    "200": {
                        "description": "Target groups (`http_sd_configs`); pods carry runtime and pod labels",
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": _TARGET_GROUP}}
                        },
                    },
                    **_errors(401, 403),
                },
            }
        },
        "/v1/metrics/pods/{runtime}/{pod}": {
            "get": {
                "summary": "One pod's Prometheus metrics, fetched from its Unix socket",
                "parameters": [
                    {"name": "runtime", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "pod", "in": "path", "required": True, "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "Metrics"}, **_errors(401, 403, 404)},
            }
        },
    }
    paths.update(_free_text_paths(max_prompt_chars))
    paths.update(_ADMIN_PATHS)
    job_schemas = job_openapi(paths, _errors)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "toolmesh gateway",
            "version": "1",
            "description": "Serve Python functions to LLMs.",
        },
        "paths": paths,
        "components": {
            "schemas": {**_SCHEMAS, **job_schemas},
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"apiKey": []}, {}],
    }


def _free_text_paths(max_prompt_chars: int) -> dict[str, Any]:
    """The OpenAPI paths of /v1/route and /v1/execute."""
    body, errors = _json_body, _errors
    prompt = {"type": "string", "minLength": 1, "maxLength": max_prompt_chars}
    session = {"type": "string", "maxLength": MAX_SESSION_ID}
    k = {"type": "integer", "minimum": 1, "maximum": MAX_K}
    candidates = {
        "type": "array",
        "items": {"type": "object", "properties": {"name": {"type": "string"}, "score": {"type": "number"}}},
    }
    route_request = {
        "type": "object",
        "required": ["prompt"],
        "properties": {"prompt": prompt, "k": k, "session_id": session},
    }
    execute_request = {
        "type": "object",
        "required": ["prompt"],
        "properties": {"prompt": prompt, "k": k, "session_id": session, "dry_run": {"type": "boolean"}},
    }
    return {
        "/v1/route": {
            "post": {
                "summary": "The function that fits a free-text prompt, and the best candidates",
                "operationId": "route",
                "requestBody": {"required": True, "content": {"application/json": {"schema": route_request}}},
                "responses": {
                    "200": body(
                        {
                            "type": "object",
                            "properties": {"match": {"type": ["string", "null"]}, "candidates": candidates},
                        },
                        "match is null when no function clears the threshold",
                    ),
                    **errors(400, 401, 413, 429, 503),
                },
            }
        },
        "/v1/execute": {
            "post": {
                "summary": "Route a prompt, extract the arguments, call the function",
                "description": (
                    "Answers the function, its arguments (and where each came from), the result, and code "
                    "(a Python snippet and a curl line) that repeats the call. 404 when no function fits "
                    "and 422 naming the required arguments the prompt lacks; both carry the candidates."
                ),
                "operationId": "execute",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": execute_request}},
                },
                "responses": {
                    "200": body({"type": "object"}, "function, arguments, argument_sources, result, code"),
                    **errors(400, 401, 403, 404, 413, 422, 429, 503, 504),
                },
            }
        },
    }


_OUTCOME = {
    "type": "object",
    "required": ["runtime", "status"],
    "properties": {
        "runtime": {"type": "string"},
        "status": {"enum": ["reloaded", "failed"]},
        "error": {"type": "string", "description": "Why it failed; its old version keeps serving"},
        "traceback": {"type": "string", "description": "The failed import's traceback"},
    },
}
_ADMIN_PATHS: dict[str, Any] = {
    "/v1/admin/reload": {
        "post": {
            "summary": "Reload the runtimes' modules with no call failing (needs the @admin scope)",
            "description": (
                "Imports each runtime's modules again in a new template process, starts new pods from "
                "it, sends new calls to them and drains the old pods. A runtime given by an address has "
                "its catalog read again. A runtime whose modules fail to import keeps its old version "
                "serving: its outcome is `failed` with the error, and `ok` is false. The catalog, MCP "
                "listen streams (list_changed) and the router's index follow the change."
            ),
            "operationId": "reloadRuntimes",
            "requestBody": {
                "required": False,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "runtime": {"type": "string", "description": "Only this one (default: all)"}
                            },
                            "additionalProperties": False,
                        }
                    }
                },
            },
            "responses": {
                "200": _json_body(
                    {
                        "type": "object",
                        "required": ["ok", "catalog_changed", "runtimes"],
                        "properties": {
                            "ok": {"type": "boolean"},
                            "catalog_changed": {"type": "boolean"},
                            "catalog_error": {"type": "string"},
                            "runtimes": {"type": "array", "items": _OUTCOME},
                        },
                    },
                    "Each runtime's outcome",
                ),
                **_errors(400, 401, 403, 404, 413),
            },
        }
    }
}
