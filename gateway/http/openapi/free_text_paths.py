"""The OpenAPI paths of the router's HTTP surface: /v1/route and /v1/execute."""

from __future__ import annotations

from typing import Any

from toolmesh.gateway.core.requests import MAX_K
from toolmesh.gateway.http.openapi.api_schemas import errors, json_body
from toolmesh.router.search.index import LEXICAL_WEIGHT
from toolmesh.router.sessions import MAX_SESSION_ID


def free_text_paths(max_prompt_chars: int) -> dict[str, Any]:
    """The OpenAPI paths of /v1/route and /v1/execute."""
    prompt = {"type": "string", "minLength": 1, "maxLength": max_prompt_chars}
    session = {"type": "string", "maxLength": MAX_SESSION_ID}
    k = {"type": "integer", "minimum": 1, "maximum": MAX_K}
    scores = {
        "type": "object",
        "description": "The two signals the score fuses, as computed for this ranking",
        "properties": {
            "dense": {"type": "number", "description": "Cosine similarity of the embeddings"},
            "lexical": {"type": "number", "description": "BM25 of the prompt's words"},
        },
    }
    candidate = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "score": {
                "type": "number",
                "description": f"dense + {LEXICAL_WEIGHT} * lexical, plus a bonus for the session's "
                "last functions",
            },
            "scores": scores,
        },
    }
    candidates = {"type": "array", "items": candidate}
    route_request = {
        "type": "object",
        "required": ["prompt"],
        "properties": {"prompt": prompt, "k": k, "session_id": session},
    }
    execute_request = {
        "oneOf": [
            {
                "type": "object",
                "required": ["prompt"],
                "properties": {
                    "prompt": prompt,
                    "k": k,
                    "session_id": session,
                    "dry_run": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
            {
                "type": "object",
                "required": ["confirm"],
                "properties": {
                    "confirm": {
                        "type": "string",
                        "pattern": "^[A-Za-z0-9_-]{1,64}$",
                        "description": "The confirmation token of an earlier answer: runs that call, once",
                    }
                },
                "additionalProperties": False,
            },
        ]
    }
    confirmation = {
        "type": ["object", "null"],
        "description": "Why the call waits (or on a dry run would wait) for a confirmation; null: it runs",
        "properties": {
            "reason": {"type": "string"},
            "destructive": {"type": "boolean"},
            "carried": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Arguments carried over from the session's previous call",
            },
            "token": {"type": "string", "description": "Send it back as `confirm` (not on a dry run)"},
            "expires_in": {"type": "number"},
        },
    }
    execution = {
        "type": "object",
        "properties": {
            "status": {"enum": ["done", "needs_confirmation", "planned"]},
            "function": {"type": "string"},
            "arguments": {"type": "object"},
            "argument_sources": {"type": "object", "additionalProperties": {"type": "string"}},
            "result": {"type": ["object", "null"]},
            "code": {"type": "object", "additionalProperties": {"type": "string"}},
            "follow_up": {"type": "boolean"},
            "routing_id": {"type": "string"},
            "candidates": candidates,
            "confirmation": confirmation,
            "session_id": {"type": ["string", "null"]},
        },
    }
    return {
        "/v1/route": {
            "post": {
                "summary": "The function that fits a free-text prompt, and the best candidates",
                "operationId": "route",
                "requestBody": {"required": True, "content": {"application/json": {"schema": route_request}}},
                "responses": {
                    "200": json_body(
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
        "/v1/route/feedback": {
            "post": {
                "summary": "Teach the router which function was right for a recent routing's prompt",
                "description": (
                    "The prompt of `routing_id` (from a route or execute answer of this gateway) becomes a "
                    "learned example of `function`. Needs a key with the `@learn` permission scope."
                ),
                "operationId": "routeFeedback",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["routing_id", "function"],
                                "properties": {
                                    "routing_id": {"type": "string", "minLength": 1},
                                    "function": {"type": "string", "minLength": 1},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": json_body(
                        {
                            "type": "object",
                            "properties": {
                                "function": {"type": "string"},
                                "learned": {"type": "string"},
                                "learned_examples": {"type": "integer"},
                            },
                        },
                        "what was learned",
                    ),
                    **errors(400, 401, 403, 404, 413, 429, 503),
                },
            }
        },
        "/v1/execute": {
            "post": {
                "summary": "Route a prompt, extract the arguments, call the function once it may run",
                "description": (
                    "Answers the function, its arguments (and where each came from), the result, and code "
                    "(a Python snippet and a curl line) that repeats the call. Only a read_only function "
                    "runs at once (status done); any other is answered planned (status "
                    'needs_confirmation) with a confirmation token, and `{"confirm": token}` runs '
                    "exactly that call once (409 when used or expired). 404 when no function fits, 422 "
                    "naming the required arguments the prompt lacks (both carry the candidates), 403 "
                    "not_from_free_text for a function that never runs from free text."
                ),
                "operationId": "execute",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": execute_request}},
                },
                "responses": {
                    "200": json_body(execution, "the call, run or planned"),
                    **errors(400, 401, 403, 404, 409, 413, 422, 429, 503, 504),
                },
            }
        },
    }
