"""The HTTP API: Starlette routes that convert to and from the wire and delegate to `Mesh`.

GET  /v1/functions                    the catalog (what the key may call)
GET  /v1/functions/{name}             one function
POST /v1/functions/{name}/invoke      call it; the body is the arguments object
                                      (Accept: text/event-stream: items as they come, sse.py)
                                      (Prefer: respond-async: a job, 202; job_routes.py)
/v1/jobs, /v1/jobs/{id}[/retry]       asynchronous calls: status, results, dead letters
POST /v1/hooks/{name}                 webhook triggers: a signed body becomes a job (job_routes.py)
GET  /v1/tools?format=&strict=        the catalog as LLM tool definitions (&query=&k=: only the top k)
POST /v1/route, POST /v1/execute      free-text routing and execution (free_text_routes.py)
POST /v1/tool_calls                   run a model's tool calls, answer in its format
GET  /v1/namespaces                   namespaces plus a ready-made system message
GET  /v1/resources                    the MCP resources and templates the key may read
GET  /v1/resources/read?uri=          read one: the Result of its function (as .../invoke answers)
GET  /openapi.json, /healthz, /readyz?runtime=&strict=
GET  /metrics, /v1/metrics/targets, /v1/metrics/pods/...  (metrics_routes.py; a key needs "@metrics")
POST /v1/admin/reload                 reload the runtimes (a key needs "@admin"; admin_routes.py)
/v1/admin/triggers[/{name}/{action}] list, pause, resume, run the triggers (also "@admin")
GET  /v1/invocations/recent?limit=    the last calls the key may see (invocation_routes.py)
GET  /ui/...                          the web console: static files calling this API (console/)

Every route sits behind `BrowserGuard` (guards/browser_guard.py): Host, Origin and Content-Type checks.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from toolmesh.errors import FunctionNotFound, InternalError, InvalidRequest, ToolmeshError
from toolmesh.gateway.core.keyed_calls import REPLAYED
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest, RouteRequest, ToolsRequest
from toolmesh.gateway.core.result_json import result_json
from toolmesh.gateway.core.tool_formats import parse_tool_format
from toolmesh.gateway.http.adapt import JSON, body, caller, error_response, json_response
from toolmesh.gateway.http.admin_routes import admin_routes
from toolmesh.gateway.http.console import console_routes
from toolmesh.gateway.http.free_text_routes import free_text_routes
from toolmesh.gateway.http.guards.browser_guard import BrowserGuard
from toolmesh.gateway.http.invocation_routes import invocation_routes
from toolmesh.gateway.http.job_routes import job_routes, submit_invoke, wants_async
from toolmesh.gateway.http.lean.hot_routes import HotRoute, HotRoutes, endpoint
from toolmesh.gateway.http.metrics_routes import metrics_routes
from toolmesh.gateway.http.openapi import openapi_document
from toolmesh.gateway.http.payloads import arguments_body, parse_json
from toolmesh.gateway.http.sse import event_stream, interleaving, wants_events
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.openai.toolcalls import parse_tool_calls, render_results
from toolmesh.gateway.triggers.trigger_host import TriggerHost
from toolmesh.runtimes.functions.spec import FunctionSpec, spec_to_dict

log = logging.getLogger("toolmesh.gateway")


def resource_dict(spec: FunctionSpec) -> dict[str, Any]:
    """A resource as `GET /v1/resources` lists it; `uri` may be a template (``{name}`` parts)."""
    assert spec.feature is not None
    return {
        "uri": spec.feature.uri,
        "function": spec.qualified_name,
        "title": spec.feature.title,
        "description": spec.description,
        "mime_type": spec.feature.mime_type,
        "template": "{" in spec.feature.uri,
    }


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in ("true", "false", "1", "0", ""):
        raise InvalidRequest(f"query parameter {name!r} must be true or false, got {value!r}", param=name)
    return value in ("true", "1")


def create_app(
    mesh: Mesh,
    ready: Callable[[], Mapping[str, bool]] | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    allowed_origins: Sequence[str] = (),
    jobs: JobService | None = None,
    triggers: TriggerHost | None = None,
    hot_routes: Sequence[HotRoute] = (),
) -> HotRoutes:
    """The gateway's Starlette app for `mesh`, its invoke route (and `hot_routes`, some of
    `extra_routes`) served on the lean path (lean/hot_routes.py). `ready` reports each runtime's
    readiness; `extra_routes` adds other surfaces (the MCP endpoint, the chat proxy);
    `allowed_origins` adds to `[gateway] allowed_origins` (the MCP section's); `jobs` serves
    asynchronous calls (without it, `Prefer: respond-async` is ignored, as RFC 7240 allows)."""
    config = mesh.config
    max_chars = mesh.router.config.max_prompt_chars

    async def list_functions(request: Request) -> Response:
        specs = mesh.functions(caller(mesh, request))
        return json_response({"functions": [spec_to_dict(spec) for spec in specs]})

    async def get_function(request: Request) -> Response:
        spec = mesh.function(request.path_params["name"], caller(mesh, request))
        return json_response(spec_to_dict(spec))

    async def list_resources(request: Request) -> Response:
        specs = mesh.resources(caller(mesh, request))
        return json_response({"resources": [resource_dict(spec) for spec in specs]})

    async def read_resource(request: Request) -> Response:
        principal = caller(mesh, request)
        uri = request.query_params.get("uri")
        if not uri:
            raise InvalidRequest("give the resource's URI as ?uri=", param="uri")
        result = await mesh.read_resource(principal, uri, CallOptions.from_headers(request.headers))
        return Response(result_json(result), media_type=JSON)

    async def invoke(request: Request) -> Response:
        principal = caller(mesh, request)
        arguments = arguments_body(await body(mesh, request), config.max_json_depth)
        call = InvokeRequest(
            request.path_params["name"], arguments, CallOptions.from_headers(request.headers)
        )
        if jobs is not None and wants_async(request.headers.get("prefer")):
            return await submit_invoke(jobs, request, call)
        if wants_events(request.headers.get("accept")):
            wish = interleaving(request.query_params)
            if wish is None:
                return await event_stream(mesh.stream(principal, call), config.stream_keepalive)
            call = dataclasses.replace(call, events=wish.listener)
            return await event_stream(wish.merge(mesh.stream(principal, call)), config.stream_keepalive)
        result = await mesh.invoke(principal, call)
        return Response(result_json(result), media_type=JSON, headers=REPLAYED if result.replayed else None)

    async def tools(request: Request) -> Response:
        principal = caller(mesh, request)
        params = request.query_params
        query = params.get("query")
        tools_request = ToolsRequest(
            parse_tool_format(params.get("format", "openai")),
            _flag(request, "strict"),
            None if query is None else RouteRequest.parse(query, params.get("k"), max_chars=max_chars),
        )
        return json_response(await mesh.tools(principal, tools_request))

    async def tool_calls(request: Request) -> Response:
        principal = caller(mesh, request)
        document = parse_json(await body(mesh, request), config.max_json_depth)
        fmt, calls = parse_tool_calls(document, max_calls=config.max_batch)
        batch = [(call.name, call.arguments, call.error) for call in calls]
        results = await mesh.execute_batch(principal, batch, CallOptions.from_headers(request.headers))
        return json_response(render_results(fmt, calls, results))

    async def namespaces(request: Request) -> Response:
        principal = caller(mesh, request)
        listing = [
            {"name": ns.name, "description": ns.description, "functions": list(ns.functions)}
            for ns in mesh.namespaces(principal)
        ]
        message = {"role": "developer", "content": mesh.system_message(principal)}
        return json_response({"namespaces": listing, "system_message": message})

    document = openapi_document(max_chars)

    async def openapi(request: Request) -> Response:
        return json_response(document)

    async def healthz(request: Request) -> Response:
        """Liveness of the gateway process itself: it answers, so its event loop runs.
        Runtimes are not looked at (a dead runtime is no reason to restart the gateway)."""
        return json_response({"status": "ok"})

    async def readyz(request: Request) -> Response:
        """Readiness, per runtime: ``{"ready": <all of them>, "runtimes": {name: bool}}``.

        Plain ``/readyz`` answers 200 while the gateway serves, whatever its runtimes do, and
        503 (``"draining": true``) from the moment it starts stopping (`[gateway] drain_delay`):
        that is what a Kubernetes readiness probe reads, and one runtime down (restarting
        its template, backing off) must not take the whole gateway out of its Service;
        calls to the other runtimes still work, and calls to that one get a retryable 503.
        ``?runtime=NAME`` answers 503 unless that runtime is ready (404 for no such
        runtime); ``?strict=true`` answers 503 unless every runtime is ready.
        """
        runtimes = dict(ready()) if ready is not None else {}
        if mesh.drain.draining:
            # Stopping: out of every load balancer's rotation before the listener closes.
            return json_response({"ready": False, "draining": True, "runtimes": runtimes}, 503)
        ok = all(runtimes.values())
        body: dict[str, Any] = {"ready": ok, "runtimes": runtimes}
        name = request.query_params.get("runtime")
        if name is not None:
            if name not in runtimes:
                raise FunctionNotFound(f"no runtime named {name!r}", param="runtime")
            return json_response({**body, "runtime": name}, 200 if runtimes[name] else 503)
        return json_response(body, 200 if ok or not _flag(request, "strict") else 503)

    async def toolmesh_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ToolmeshError)
        return error_response(exc)

    async def http_error(request: Request, exc: Exception) -> Response:
        # Routing errors (no such path, wrong method) keep their status but use the
        # hierarchy's invalid_request code, so clients rebuild a known class.
        assert isinstance(exc, HTTPException)
        if exc.detail != HTTPStatus(exc.status_code).phrase:
            message = exc.detail  # raised by a route, saying what it did not find
        elif exc.status_code == 404:
            message = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"{request.url.path} does not accept {request.method}"
        else:
            message = exc.detail
        response = error_response(InvalidRequest(message))
        response.status_code = exc.status_code
        response.headers.update(exc.headers or {})
        return response

    async def disconnected(request: Request, exc: Exception) -> Response:
        # The client left mid-body: nobody reads this answer, and it is no error of ours.
        log.debug("client disconnected before sending the whole body", extra={"path": request.url.path})
        return Response(status_code=499)

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
        Route("/v1/resources", list_resources, methods=["GET"]),
        Route("/v1/resources/read", read_resource, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *metrics_routes(mesh),
        *free_text_routes(mesh),
        *admin_routes(mesh, triggers),
        *invocation_routes(mesh),
        *(job_routes(jobs, triggers) if jobs is not None else ()),
        *console_routes(mesh.auth.tokens.sign_in if mesh.auth.tokens is not None else None),
        *extra_routes,
    ]
    handlers: dict[Any, Callable[[Request, Exception], Any]] = {
        ToolmeshError: toolmesh_error,
        HTTPException: http_error,
        ClientDisconnect: disconnected,
        Exception: unexpected,
    }
    origins = (*config.allowed_origins, *allowed_origins)
    guard = Middleware(BrowserGuard, allowed_hosts=config.allowed_hosts, allowed_origins=origins)
    app = Starlette(routes=routes, exception_handlers=handlers, middleware=[guard])
    hot = [
        HotRoute("/v1/functions/{name}/invoke", "POST", endpoint(invoke)),
        HotRoute("/v1/tool_calls", "POST", endpoint(tool_calls)),
        *hot_routes,
    ]
    return HotRoutes(app, BrowserGuard(app, config.allowed_hosts, origins), hot, handlers)


def metrics_only_app(mesh: Mesh, allowed_hosts: Sequence[str]) -> Starlette:
    """What the `[gateway] metrics_port` listener serves: the metrics routes, with no key (the
    Host check still applies: a page must not read them by rebinding its name)."""
    guard = Middleware(BrowserGuard, allowed_hosts=tuple(allowed_hosts))
    return Starlette(routes=metrics_routes(mesh, keyless=True), middleware=[guard])
