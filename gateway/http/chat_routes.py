"""`POST /v1/chat/completions`: the chat proxy on HTTP, answering JSON or, with
``stream: true``, Server-Sent Events in OpenAI's chunk format.

The tool rounds run before the first event; the final answer is then sent as
chunks (role, content pieces, the client's tool calls, the finish reason with
the ``toolmesh`` record, usage if ``stream_options.include_usage``) and
``data: [DONE]``. A failure before that is an ordinary JSON error response.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from toolmesh.errors import Unavailable
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions
from toolmesh.gateway.http.adapt import body, caller
from toolmesh.gateway.http.payloads import parse_json
from toolmesh.gateway.openai.chat import ChatProxy, ChatRequest
from toolmesh.gateway.openai.chunks import completion_chunks

PATH = "/v1/chat/completions"


def _sse(completion: dict[str, Any], include_usage: bool) -> Iterator[bytes]:
    for chunk in completion_chunks(completion, include_usage):
        yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def chat_routes(mesh: Mesh, proxy: ChatProxy | None) -> list[Route]:
    """The route; without a proxy (no [chat] upstream_url) it answers 503 saying how to turn it on."""

    async def completions(request: Request) -> Response:
        principal = caller(mesh, request)
        # The upstream model's work costs one unit; each mesh call of its rounds costs its own.
        principal.spend()
        if proxy is None:
            raise Unavailable("the chat proxy is off: set [chat] upstream_url in toolmesh.toml")
        chat = ChatRequest(parse_json(await body(mesh, request), mesh.config.max_json_depth), proxy.config)
        completion = await proxy.complete(principal, chat, CallOptions.from_headers(request.headers))
        if chat.stream:
            return StreamingResponse(
                _sse(completion, chat.include_usage),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        return Response(json.dumps(completion).encode(), media_type="application/json")

    return [Route(PATH, completions, methods=["POST"])]
