"""The HTTP API: Starlette routes that convert to and from the wire and delegate to `Mesh`.

GET  /v1/functions                    the catalog (what the key may call)
GET  /v1/functions/{name}             one function
POST /v1/functions/{name}/invoke      call it; the body is the arguments object
GET  /v1/tools?format=&strict=        the catalog as LLM tool definitions (&query=&k=: only the top k)
POST /v1/route, POST /v1/execute      free-text routing and execution (gateway/core/free_text.py)
POST /v1/tool_calls                   run a model's tool calls, answer in its format
GET  /v1/namespaces                   namespaces plus a ready-made system message
GET  /openapi.json, /healthz, /readyz, /metrics
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from toolmesh.config import RouterConfig
from toolmesh.errors import InternalError, InvalidRequest, ToolmeshError
from toolmesh.gateway.core.free_text import router_routes, tools_for_query
from toolmesh.gateway.core.mesh import CallOptions, Mesh, raise_for_call_error
from toolmesh.gateway.core.tool_formats import parse_tool_format, tool_definition
from toolmesh.gateway.http.openapi import openapi_document
from toolmesh.gateway.http.payloads import arguments_body, parse_json, read_body, result_json
from toolmesh.gateway.openai.toolcalls import parse_tool_calls, render_results
from toolmesh.router.service import RouterService
from toolmesh.runtimes.functions.spec import spec_to_dict

log = logging.getLogger("toolmesh.gateway")

JSON = "application/json"
Handler = Callable[[Request], Any]


def _json(document: Any, status: int = 200) -> Response:
    return Response(json.dumps(document).encode(), status_code=status, media_type=JSON)


def error_response(error: ToolmeshError) -> Response:
    headers = {}
    if error.retry_after is not None:
        headers["Retry-After"] = str(max(1, round(error.retry_after)))
    return Response(json.dumps(error.to_dict()).encode(), error.http_status, headers, media_type=JSON)


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in ("true", "false", "1", "0", ""):
        raise InvalidRequest(f"query parameter {name!r} must be true or false, got {value!r}", param=name)
    return value in ("true", "1")


def _options(request: Request) -> CallOptions:
    headers = request.headers
    return CallOptions(request_id=headers.get("x-request-id", ""), session_id=headers.get("x-session-id", ""))


def create_app(
    mesh: Mesh,
    ready: Callable[[], Mapping[str, bool]] | None = None,
    router: RouterService | None = None,
    extra_routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The gateway's Starlette app for `mesh`. `ready` reports each runtime's readiness;
    `router` serves the routing endpoints (without one they answer 503); `extra_routes` adds
    other surfaces (the MCP endpoint, the chat proxy)."""
    config = mesh.config
    router = router or RouterService(RouterConfig(enabled=False))

    async def body(request: Request) -> bytes:
        return await read_body(request.stream(), request.headers.get("content-length"), config.max_body_bytes)

    def principal(request: Request) -> Any:
        return mesh.authenticate(request.headers.get("authorization"))

    async def list_functions(request: Request) -> Response:
        specs = mesh.functions(principal(request))
        return _json({"functions": [spec_to_dict(spec) for spec in specs]})

    async def get_function(request: Request) -> Response:
        spec = mesh.function(request.path_params["name"], principal(request))
        return _json(spec_to_dict(spec))

    async def invoke(request: Request) -> Response:
        caller = principal(request)
        arguments = arguments_body(await body(request), config.max_json_depth)
        result = await mesh.invoke(caller, request.path_params["name"], arguments, _options(request))
        raise_for_call_error(result)
        return Response(result_json(result), media_type=JSON)

    async def tools(request: Request) -> Response:
        caller = principal(request)
        fmt = parse_tool_format(request.query_params.get("format", "openai"))
        strict = _flag(request, "strict")
        query = request.query_params.get("query")
        if query is not None:
            k = request.query_params.get("k")
            return _json(await tools_for_query(mesh, router, caller, query, k, fmt, strict))
        definitions = [tool_definition(spec, fmt, strict=strict) for spec in mesh.functions(caller)]
        return _json({"tools": definitions})

    async def tool_calls(request: Request) -> Response:
        caller = principal(request)
        document = parse_json(await body(request), config.max_json_depth)
        fmt, calls = parse_tool_calls(document, max_calls=config.max_batch)
        batch = [(call.name, call.arguments, call.error) for call in calls]
        results = await mesh.execute(caller, batch, _options(request))
        return _json(render_results(fmt, calls, results))

    async def namespaces(request: Request) -> Response:
        caller = principal(request)
        listing = [
            {"name": ns.name, "description": ns.description, "functions": list(ns.functions)}
            for ns in mesh.namespaces(caller)
        ]
        message = {"role": "developer", "content": mesh.system_message(caller)}
        return _json({"namespaces": listing, "system_message": message})

    document = openapi_document()

    async def openapi(request: Request) -> Response:
        return _json(document)

    async def healthz(request: Request) -> Response:
        return _json({"status": "ok"})

    async def readyz(request: Request) -> Response:
        runtimes = dict(ready()) if ready is not None else {}
        ok = all(runtimes.values())
        return _json({"ready": ok, "runtimes": runtimes}, 200 if ok else 503)

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(mesh.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def toolmesh_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ToolmeshError)
        return error_response(exc)

    async def http_error(request: Request, exc: Exception) -> Response:
        # Routing errors (no such path, wrong method) keep their status but use the
        # hierarchy's invalid_request code, so clients rebuild a known class.
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            message = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"{request.url.path} does not accept {request.method}"
        else:
            message = exc.detail
        envelope = InvalidRequest(message).to_dict()
        return Response(json.dumps(envelope).encode(), exc.status_code, exc.headers, media_type=JSON)

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error", extra={"path": request.url.path})
        return error_response(InternalError("internal error; see the gateway's log"))

    routes: list[BaseRoute] = [
        Route("/v1/functions", list_functions, methods=["GET"]),
        Route("/v1/functions/{name}", get_function, methods=["GET"]),
        Route("/v1/functions/{name}/invoke", invoke, methods=["POST"]),
        Route("/v1/tools", tools, methods=["GET"]),
        Route("/v1/tool_calls", tool_calls, methods=["POST"]),
        Route("/v1/namespaces", namespaces, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *router_routes(mesh, router, body, principal, _options),
        *extra_routes,
    ]
    handlers: dict[Any, Callable[[Request, Exception], Any]] = {
        ToolmeshError: toolmesh_error,
        HTTPException: http_error,
        Exception: unexpected,
    }
    return Starlette(routes=routes, exception_handlers=handlers)
