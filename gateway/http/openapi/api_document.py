"""The OpenAPI 3.1 document of the HTTP API, served at /openapi.json: the function paths
here, the others from their siblings."""

from __future__ import annotations

from typing import Any

from toolmesh.config.config_defaults import DEFAULT_MAX_PROMPT_CHARS
from toolmesh.gateway.core.requests import MAX_IDEMPOTENCY_KEY
from toolmesh.gateway.http.openapi.api_schemas import COMMON_ERRORS, SCHEMAS, errors, json_body, ref
from toolmesh.gateway.http.openapi.free_text_paths import free_text_paths
from toolmesh.gateway.http.openapi.job_paths import job_openapi
from toolmesh.gateway.http.openapi.operation_paths import OPERATION_PATHS

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
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Names this call: a repeat with the same key and arguments answers the first outcome (header "
        "`Idempotent-Replayed: true`) instead of running again; other arguments are 422, a first call "
        "still running 409 `idempotency_conflict`, one whose replica died mid-call 409 `outcome_unknown`. "
        "In a batch, call i is keyed `<key>#<i>`."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY},
}


def openapi_document(max_prompt_chars: int = DEFAULT_MAX_PROMPT_CHARS) -> dict[str, Any]:
    """The gateway's OpenAPI document; prompts are limited to `[router] max_prompt_chars`."""
    paths: dict[str, Any] = {
        "/v1/functions": {
            "get": {
                "summary": "List the functions the caller may call",
                "operationId": "listFunctions",
                "responses": {
                    "200": json_body(
                        {
                            "type": "object",
                            "properties": {"functions": {"type": "array", "items": ref("Function")}},
                        },
                        "The catalog",
                    ),
                    **errors(401, 429),
                },
            }
        },
        "/v1/functions/{name}": {
            "get": {
                "summary": "Describe one function",
                "operationId": "getFunction",
                "parameters": [_NAME],
                "responses": {
                    "200": json_body(ref("Function"), "The function"),
                    **errors(*COMMON_ERRORS, 404),
                },
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
                "parameters": [_NAME, *_REQUEST_HEADERS, _IDEMPOTENCY_KEY],
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
                            "application/json": {"schema": ref("Result")},
                            "text/event-stream": {
                                "schema": {
                                    "type": "string",
                                    "description": "`event: content|result|error` + `data: <JSON>` per event",
                                }
                            },
                        },
                    },
                    **errors(*COMMON_ERRORS, 404, 409, 413, 422, 503, 504),
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
                    "200": json_body(
                        {
                            "type": "object",
                            "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                        },
                        "Tool definitions",
                    ),
                    **errors(400, 401, 429),
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
                "parameters": [*_REQUEST_HEADERS, _IDEMPOTENCY_KEY],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {}}}},
                "responses": {
                    "200": json_body(
                        {"type": "object"}, "Tool messages, function_call_output items or results"
                    ),
                    **errors(400, 401, 413, 429),
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
                    "200": json_body(
                        {"type": "object"}, "A chat completion (or chunks as text/event-stream)"
                    ),
                    **errors(400, 401, 413, 429, 503, 504),
                },
            }
        },
        "/v1/namespaces": {
            "get": {
                "summary": "Namespaces and a system message that introduces them",
                "operationId": "listNamespaces",
                "responses": {"200": json_body({"type": "object"}, "Namespaces"), **errors(401, 429)},
            }
        },
    }
    paths.update(OPERATION_PATHS)
    paths.update(free_text_paths(max_prompt_chars))
    job_schemas = job_openapi(paths, errors)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "toolmesh gateway",
            "version": "1",
            "description": "Serve Python functions to LLMs.",
        },
        "paths": paths,
        "components": {
            "schemas": {**SCHEMAS, **job_schemas},
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"apiKey": []}, {}],
    }
