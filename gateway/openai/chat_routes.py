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
from toolmesh.gateway.core.mesh import CallOptions, Mesh
from toolmesh.gateway.http.payloads import parse_json, read_body
from toolmesh.gateway.openai.chat import EXTENSION, ChatProxy, ChatRequest

PATH = "/v1/chat/completions"
#: Characters of content per streamed chunk.
CHUNK_CHARS = 48


def completion_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """A finished chat completion as the ``chat.completion.chunk`` objects a stream would carry."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {
        "id": completion.get("id", ""),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model", ""),
    }
    if completion.get("system_fingerprint") is not None:
        base["system_fingerprint"] = completion["system_fingerprint"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        return {**base, "choices": choices, **extra}

    yield chunk({"role": "assistant", "content": ""})
    content = message.get("content")
    if isinstance(content, str):
        for start in range(0, len(content), CHUNK_CHARS):
            yield chunk({"content": content[start : start + CHUNK_CHARS]})
    if message.get("refusal"):
        yield chunk({"refusal": message["refusal"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice.get("finish_reason") or "stop", **{EXTENSION: completion.get(EXTENSION)})
    if include_usage and completion.get("usage") is not None:
        yield {**base, "choices": [], "usage": completion["usage"]}


def _sse(completion: dict[str, Any], include_usage: bool) -> Iterator[bytes]:
    for chunk in completion_chunks(completion, include_usage):
        yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def chat_routes(mesh: Mesh, proxy: ChatProxy | None) -> list[Route]:
    """The route; without a proxy (no [chat] upstream_url) it answers 503 saying how to turn it on."""

    async def completions(request: Request) -> Response:
        principal = mesh.authenticate(request.headers.get("authorization"))
        if proxy is None:
            raise Unavailable("the chat proxy is off: set [chat] upstream_url in toolmesh.toml")
        body = await read_body(
            request.stream(), request.headers.get("content-length"), mesh.config.max_body_bytes
        )
        chat = ChatRequest(parse_json(body, mesh.config.max_json_depth), proxy.config)
        options = CallOptions(
            request_id=request.headers.get("x-request-id", ""),
            session_id=request.headers.get("x-session-id", ""),
        )
        completion = await proxy.complete(principal, chat, options)
        if chat.stream:
            return StreamingResponse(
                _sse(completion, chat.include_usage),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        return Response(json.dumps(completion).encode(), media_type="application/json")

    return [Route(PATH, completions, methods=["POST"])]
