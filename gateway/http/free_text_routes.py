"""The router's HTTP surface: thin conversions onto `Mesh.route` and `Mesh.execute`.

POST /v1/route      {"prompt", "k"?, "session_id"?}  -> {"match", "candidates"}
POST /v1/execute    {"prompt", "session_id"?, "dry_run"?, "k"?} -> status, function, arguments, result,
                    code, confirmation (gateway/core/free_text.py)
POST /v1/execute    {"confirm": token} -> the confirmed call, run once
POST /v1/route/feedback {"routing_id", "function"} or {"routing_id", "correct": false}
    -> what was learned and unlearned (needs the `@learn` scope)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions, ConfirmRequest, ExecuteRequest, RouteRequest
from toolmesh.gateway.http.adapt import base_url, body, caller, json_response
from toolmesh.gateway.http.payloads import parse_json


def _object(document: Any, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(document, dict):
        raise InvalidRequest("the body must be a JSON object")
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise InvalidRequest(
            f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}", param=unknown[0]
        )
    return document


def _route_request(document: Mapping[str, Any], request: Request, max_chars: int) -> RouteRequest:
    # The body's session_id, else the X-Session-Id header (which function calls see too).
    session = document.get("session_id") or request.headers.get("x-session-id")
    return RouteRequest.parse(document.get("prompt"), document.get("k"), session, max_chars=max_chars)


def free_text_routes(mesh: Mesh) -> list[Route]:
    depth = mesh.config.max_json_depth
    max_chars = mesh.router.config.max_prompt_chars

    async def route_endpoint(request: Request) -> Response:
        principal = caller(mesh, request)
        document = _object(parse_json(await body(mesh, request), depth), {"prompt", "k", "session_id"})
        ranked = await mesh.route(principal, _route_request(document, request, max_chars))
        return json_response(ranked.to_dict())

    async def execute_endpoint(request: Request) -> Response:
        principal = caller(mesh, request)
        fields = {"prompt", "k", "session_id", "dry_run"}
        document = parse_json(await body(mesh, request), depth)
        if isinstance(document, dict) and "confirm" in document:
            token = _object(document, {"confirm"})["confirm"]
            confirm = ConfirmRequest.parse(token, CallOptions.from_headers(request.headers))
            return json_response((await mesh.confirm(principal, confirm)).to_dict())
        document = _object(document, fields | {"confirm"})
        dry_run = document.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise InvalidRequest("dry_run must be true or false", param="dry_run")
        route = _route_request(document, request, max_chars)
        execute = ExecuteRequest(route, dry_run, CallOptions.from_headers(request.headers), base_url(request))
        execution = await mesh.execute(principal, execute)
        return json_response(execution.to_dict())

    async def feedback_endpoint(request: Request) -> Response:
        principal = caller(mesh, request)
        fields = {"routing_id", "function", "correct"}
        document = _object(parse_json(await body(mesh, request), depth), fields)
        correct = document.get("correct", True)
        if not isinstance(correct, bool):
            raise InvalidRequest("correct must be true or false", param="correct")
        if not correct and "function" in document:
            raise InvalidRequest(
                'give either the right "function" or "correct": false, not both', param="function"
            )
        for name in ("routing_id", "function") if correct else ("routing_id",):
            if not isinstance(document.get(name), str) or not document[name]:
                raise InvalidRequest(f"{name} must be a non-empty string", param=name)
        function = document["function"] if correct else None
        learned = await mesh.route_feedback(principal, document["routing_id"], function)
        return json_response(learned)

    return [
        Route("/v1/route", route_endpoint, methods=["POST"]),
        Route("/v1/route/feedback", feedback_endpoint, methods=["POST"]),
        Route("/v1/execute", execute_endpoint, methods=["POST"]),
    ]
