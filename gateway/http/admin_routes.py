"""Operating the gateway; every route needs the `@admin` permission (the open gateway has it).

POST /v1/admin/reload                          reload the runtimes (all, or ``{"runtime": name}``)
GET  /v1/admin/triggers                        the triggers: source, paused, a schedule's next run
POST /v1/admin/triggers/{name}/pause|resume    for every replica (the trigger's document)
POST /v1/admin/triggers/{name}/run             fire a schedule now: 202 with its job

The reload comes with no call failing.

Needs the `@admin` permission (the open gateway, with no keys, has it). Answers 200 with
each runtime's outcome, ``"ok": false`` when one failed (its old version keeps serving,
and its entry says why), 404 for a runtime that does not exist.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest, TriggerNotFound
from toolmesh.gateway.core.auth import ADMIN
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.http.adapt import body, caller, json_response
from toolmesh.gateway.http.payloads import parse_json
from toolmesh.gateway.triggers.trigger_host import TriggerHost

PATH = "/v1/admin/reload"
TRIGGERS_PATH = "/v1/admin/triggers"
TRIGGER_ACTIONS = ("pause", "resume", "run")


def _runtime(raw: bytes, max_depth: int) -> str | None:
    """The runtime the body names; an empty body means every runtime."""
    if not raw.strip():
        return None
    document = parse_json(raw, max_depth)
    if not isinstance(document, dict) or set(document) - {"runtime"}:
        raise InvalidRequest('the body must be empty or {"runtime": "<name>"}')
    runtime = document.get("runtime")
    if runtime is not None and not isinstance(runtime, str):
        raise InvalidRequest("runtime must be a string", param="runtime")
    return runtime


def admin_routes(mesh: Mesh, triggers: TriggerHost | None = None) -> list[Route]:
    async def reload(request: Request) -> Response:
        principal = caller(mesh, request)
        runtime = _runtime(await body(mesh, request), mesh.config.max_json_depth)
        report = await mesh.reload(principal, runtime)
        return json_response(report.to_dict())

    def operator(request: Request) -> TriggerHost:
        caller(mesh, request).require(ADMIN, "operate triggers")
        if triggers is None:
            raise TriggerNotFound("this gateway has no [[triggers]]")
        return triggers

    async def list_triggers(request: Request) -> Response:
        host = operator(request)
        return json_response({"triggers": [await host.describe(name) for name in host.service.triggers]})

    async def act(request: Request) -> Response:
        host = operator(request)
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in TRIGGER_ACTIONS:
            raise InvalidRequest(f"action must be one of {', '.join(TRIGGER_ACTIONS)}, got {action!r}")
        if action == "run":
            job = await host.run(name)
            response = json_response(job.document(), 202)
            response.headers["Location"] = f"/v1/jobs/{job.id}"
            return response
        await host.service.set_paused(name, action == "pause")
        return json_response(await host.describe(name))

    return [
        Route(PATH, reload, methods=["POST"]),
        Route(TRIGGERS_PATH, list_triggers, methods=["GET"]),
        Route(TRIGGERS_PATH + "/{name}/{action}", act, methods=["POST"]),
    ]
