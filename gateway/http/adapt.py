"""The conversions every HTTP route shares: the caller, the body, call options, JSON and errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive

from toolmesh.error_shapes import http_error
from toolmesh.errors import ToolmeshError
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.http.payloads import check_length, read_body, whole_body

JSON = "application/json"


def json_response(document: Any, status: int = 200) -> Response:
    return Response(json.dumps(document).encode(), status_code=status, media_type=JSON)


def error_response(error: ToolmeshError, *, jsonrpc: bool = False) -> Response:
    rendered = http_error(error, jsonrpc=jsonrpc)
    return Response(rendered.body, rendered.status, rendered.headers)


def caller(mesh: Mesh, request: Request) -> Principal:
    return mesh.authenticate(request.headers.get("authorization"))


async def body(mesh: Mesh, request: Request) -> bytes:
    """The request's whole body, within `[gateway] max_body_bytes` (read once: not with
    `request.body()` as well)."""
    content_length = request.headers.get("content-length")
    limit = mesh.config.max_body_bytes
    check_length(content_length, limit)  # before asking for the body (no 100 Continue for it)
    message = await request.receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        # The common case, a body in one message: no chunk iterator, no copy.
        return whole_body(message.get("body", b""), limit)
    return await read_body(_chunks(message, request.receive), content_length, limit)


def base_url(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


async def _chunks(message: Message, receive: Receive) -> AsyncIterator[bytes]:
    """The body's chunks from `message` on (as `Request.stream`, which would not see `message`)."""
    while True:
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return
        message = await receive()
