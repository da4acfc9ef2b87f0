"""The router's HTTP surface, adapted onto `toolmesh.router`: thin conversions, no logic.

POST /v1/route      {"prompt", "k"?, "session_id"?}  -> {"match", "candidates"}
POST /v1/execute    {"prompt", "session_id"?, "dry_run"?, "k"?} -> function, arguments, result, code
GET  /v1/tools?query=...&k=...  (handled by `tools_for_query`, called from the tools route)

The gRPC `Mesh.Route` servicer uses `route` below too, so both transports
validate and answer alike.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest, Unavailable
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import CallOptions, Mesh, raise_for_call_error
from toolmesh.gateway.core.tool_formats import ToolFormat, tool_definition
from toolmesh.gateway.http.payloads import parse_json, result_json
from toolmesh.router.routing import RouteResult
from toolmesh.router.service import RouterService
from toolmesh.router.sessions import MAX_SESSION_ID
from toolmesh.router.text import Document
from toolmesh.runtimes.functions.spec import FunctionSpec

MAX_K = 100


def spec_document(spec: FunctionSpec) -> Document:
    """The router's view of a catalog function."""
    return Document(
        key=spec.qualified_name,
        name=spec.name,
        namespace=spec.namespace,
        description=spec.description,
        parameters=spec.input_schema,
    )


def spec_documents(specs: Iterable[FunctionSpec]) -> list[Document]:
    return [spec_document(spec) for spec in specs]


@dataclass(frozen=True, slots=True)
class RouteRequest:
    prompt: str
    k: int
    session_id: str | None


def parse_k(value: object, default: int) -> int:
    if value is None or value == 0:
        return default
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise InvalidRequest(f"k must be an integer, got {value!r}", param="k") from None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_K:
        raise InvalidRequest(f"k must be an integer from 1 to {MAX_K}, got {value!r}", param="k")
    return value


def parse_route_request(prompt: object, k: object, session_id: object, default_k: int) -> RouteRequest:
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidRequest("prompt must be a non-empty string", param="prompt")
    if session_id in (None, ""):
        session_id = None
    elif not isinstance(session_id, str) or len(session_id) > MAX_SESSION_ID:
        raise InvalidRequest(
            f"session_id must be a string of at most {MAX_SESSION_ID} characters", param="session_id"
        )
    return RouteRequest(prompt, parse_k(k, default_k), session_id)


def _object(document: Any, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(document, dict):
        raise InvalidRequest("the body must be a JSON object")
    unknown = sorted(set(document) - allowed)
    if unknown:
        raise InvalidRequest(
            f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}", param=unknown[0]
        )
    return document


async def route(service: RouterService, principal: Principal, request: RouteRequest) -> RouteResult:
    """Rank the functions `principal` may call for the prompt.

    In a worker thread: embedding the prompt takes milliseconds of onnxruntime work,
    which must not stall the event loop's other requests (onnxruntime releases the GIL).
    """
    router = service.router()
    return await asyncio.to_thread(
        router.route, request.prompt, request.k, session_id=request.session_id, allowed=principal.allows
    )


async def tools_for_query(
    mesh: Mesh,
    service: RouterService,
    principal: Principal,
    query: str,
    k: object,
    fmt: ToolFormat,
    strict: bool,
) -> dict[str, Any]:
    """Only the top-k tools for `query`, in `fmt`, with their scores."""
    request = parse_route_request(query, k, None, service.config.k)
    ranked = await route(service, principal, request)
    specs = [mesh.catalog.resolve(c.key) for c in ranked.candidates]
    return {
        "tools": [tool_definition(spec, fmt, strict=strict) for spec in specs],
        "candidates": ranked.to_dict()["candidates"],
    }


def router_routes(
    mesh: Mesh,
    service: RouterService,
    body: Callable[[Request], Awaitable[bytes]],
    principal: Callable[[Request], Principal],
    options: Callable[[Request], CallOptions],
) -> list[Route]:
    depth = mesh.config.max_json_depth

    async def route_endpoint(request: Request) -> Response:
        caller = principal(request)
        document = _object(parse_json(await body(request), depth), {"prompt", "k", "session_id"})
        parsed = parse_route_request(
            document.get("prompt"), document.get("k"), _session(document, request), service.config.k
        )
        return _json((await route(service, caller, parsed)).to_dict())

    async def execute_endpoint(request: Request) -> Response:
        caller = principal(request)
        document = _object(parse_json(await body(request), depth), {"prompt", "k", "session_id", "dry_run"})
        parsed = parse_route_request(
            document.get("prompt"), document.get("k"), _session(document, request), service.config.k
        )
        dry_run = document.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise InvalidRequest("dry_run must be true or false", param="dry_run")
        call_options = options(request)

        async def invoke(function: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
            encoded = json.dumps(dict(arguments)).encode()
            session = parsed.session_id or call_options.session_id
            result = await mesh.invoke(
                caller,
                function,
                encoded,
                CallOptions(call_options.request_id, session, call_options.metadata),
            )
            raise_for_call_error(result)
            answer: Mapping[str, Any] = json.loads(result_json(result))
            return answer

        execution = await service.executor().execute(
            parsed.prompt,
            invoke,
            k=parsed.k,
            session_id=parsed.session_id,
            dry_run=dry_run,
            allowed=caller.allows,
            base_url=f"{request.url.scheme}://{request.url.netloc}",
            with_key=not mesh.auth.open,
        )
        return _json({**execution.to_dict(), "session_id": parsed.session_id})

    return [
        Route("/v1/route", route_endpoint, methods=["POST"]),
        Route("/v1/execute", execute_endpoint, methods=["POST"]),
    ]


def _session(document: Mapping[str, Any], request: Request) -> object:
    """The body's session_id, else the X-Session-Id header (which function calls see too)."""
    return document.get("session_id") or request.headers.get("x-session-id")


def _json(document: Any) -> Response:
    return Response(json.dumps(document).encode(), media_type="application/json")


def router_paths(body: Callable[[dict[str, Any], str], Any], errors: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAPI paths of the routing endpoints (`body` and `errors` are openapi.py's helpers)."""
    prompt = {"type": "string", "minLength": 1}
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


class RouterToolSelector:
    """The chat proxy's `ToolSelector` backed by the router: the top-k of the caller's
    functions for the latest user message, or all of them while the router is unavailable."""

    def __init__(self, service: RouterService) -> None:
        self._service = service

    async def select(self, query: str, specs: Sequence[FunctionSpec], k: int) -> Sequence[FunctionSpec]:
        try:
            router = self._service.router()
        except Unavailable:
            return specs
        offered = {spec.qualified_name: spec for spec in specs}
        # Embedding a prompt takes milliseconds: off the event loop.
        ranked = await asyncio.to_thread(router.route, query, k, allowed=offered.__contains__)
        return [offered[c.key] for c in ranked.candidates if c.key in offered]
