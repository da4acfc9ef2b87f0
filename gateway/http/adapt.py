"""The conversions every HTTP route shares: the caller, the body, call options, JSON and errors."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from toolmesh.error_shapes import http_error
from toolmesh.errors import ToolmeshError
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.http.payloads import read_body

JSON = "application/json"


def json_response(document: Any, status: int = 200) -> Response:
    return Response(json.dumps(document).encode(), status_code=status, media_type=JSON)


def error_response(error: ToolmeshError, *, jsonrpc: bool = False) -> Response:
    rendered = http_error(error, jsonrpc=jsonrpc)
    return Response(rendered.body, rendered.status, rendered.headers)


def caller(mesh: Mesh, request: Request) -> Principal:
    return mesh.authenticate(request.headers.get("authorization"))


async def body(mesh: Mesh, request: Request) -> bytes:
    return await read_body(
        request.stream(), request.headers.get("content-length"), mesh.config.max_body_bytes
    )


def base_url(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"
