"""The OpenAPI paths of the router's HTTP surface: /v1/route and /v1/execute."""

from __future__ import annotations

from typing import Any

from toolmesh.gateway.core.requests import MAX_K
from toolmesh.gateway.http.openapi.api_schemas import errors, json_body
from toolmesh.router.index import LEXICAL_WEIGHT
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
                    "200": json_body(
                        {"type": "object"}, "function, arguments, argument_sources, result, code"
                    ),
                    **errors(400, 401, 403, 404, 409, 413, 422, 429, 503, 504),
                },
            }
        },
    }
