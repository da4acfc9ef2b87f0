"""`POST /v1/admin/reload`: reload the runtimes (all, or ``{"runtime": name}``) with no call failing.

Needs the `@admin` permission (the open gateway, with no keys, has it). Answers 200 with
each runtime's outcome, ``"ok": false`` when one failed (its old version keeps serving,
and its entry says why), 404 for a runtime that does not exist.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.http.adapt import body, caller, json_response
from toolmesh.gateway.http.payloads import parse_json

PATH = "/v1/admin/reload"


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


def admin_routes(mesh: Mesh) -> list[Route]:
    async def reload(request: Request) -> Response:
        principal = caller(mesh, request)
        runtime = _runtime(await body(mesh, request), mesh.config.max_json_depth)
        report = await mesh.reload(principal, runtime)
        return json_response(report.to_dict())

    return [Route(PATH, reload, methods=["POST"])]
