"""`GET /v1/invocations/recent?limit=N`: this gateway's last calls, newest first (read-only).

What the console's live view lists. Each entry: time (when the call started, UTC), request_id,
function, outcome, duration_ms and principal (the key's name). A key sees its own calls; a key
with "@admin" (or an open gateway) sees everyone's; see core/recent_invocations.py.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.recent_invocations import DEFAULT_LIMIT
from toolmesh.gateway.http.adapt import caller, json_response

PATH = "/v1/invocations/recent"


def _limit(text: str | None, most: int) -> int:
    if text is None:
        return min(DEFAULT_LIMIT, most)
    if not text.isdigit() or not 1 <= int(text) <= most:
        raise InvalidRequest(f"limit must be an integer from 1 to {most}, got {text!r}", param="limit")
    return int(text)


def invocation_routes(mesh: Mesh) -> list[Route]:
    async def recent(request: Request) -> Response:
        principal = caller(mesh, request)
        limit = _limit(request.query_params.get("limit"), mesh.recent.capacity)
        calls = mesh.recent_invocations(principal, limit)
        return json_response({"invocations": [call.to_dict() for call in calls]})

    return [Route(PATH, recent, methods=["GET"])]
