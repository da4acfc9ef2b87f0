"""`GET /.well-known/oauth-protected-resource[/<path>]`: RFC 9728 metadata, with no key (clients
read it to learn which issuer to ask for a token). `/mcp` and `/mcp/<namespace>` get their own."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from toolmesh.gateway.identity.protected_resource import WELL_KNOWN, ProtectedResource


def metadata_routes(resource: ProtectedResource) -> list[BaseRoute]:
    async def metadata(request: Request) -> Response:
        document = resource.document(request.path_params.get("path", ""))
        # Public and the same for everyone: browsers (a web MCP host) may read it from any origin.
        headers = {"access-control-allow-origin": "*", "cache-control": "max-age=300"}
        return Response(json.dumps(document).encode(), media_type="application/json", headers=headers)

    return [
        Route(WELL_KNOWN, metadata, methods=["GET"]),
        Route(WELL_KNOWN + "/{path:path}", metadata, methods=["GET"]),
    ]
