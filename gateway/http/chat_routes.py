"""`POST /v1/chat/completions`: the chat proxy on HTTP, answering JSON or, with
``stream: true``, Server-Sent Events in OpenAI's chunk format (chat_stream.py says
which chunks, and when).

A stream's status is only sent once the upstream's first chunk is in, so a failure
before it (a refused key, an upstream 429) is an ordinary JSON error response with
its status. A failure after it ends the stream with ``data: {"error": {...}}`` and no
``[DONE]``, as OpenAI's API does; the openai SDK raises it as an `APIError`.
While mesh calls run between rounds the stream is quiet; after `[gateway] stream_keepalive`
seconds of that, a ``: keep-alive`` comment goes out, as for SSE invoke (sse.py), so proxies
with an idle timeout keep it open. SSE readers, the openai SDK's among them, skip comments.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from toolmesh.error_shapes import envelope
from toolmesh.errors import InternalError, ToolmeshError, Unavailable
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions
from toolmesh.gateway.http.adapt import body, caller
from toolmesh.gateway.http.payloads import parse_json
from toolmesh.gateway.http.sse import KEEPALIVE, with_keepalives
from toolmesh.gateway.openai.chat import ChatProxy, ChatRequest
from toolmesh.gateway.openai.chat_stream import stream_turn

PATH = "/v1/chat/completions"

log = logging.getLogger(__name__)


def _event(document: Any) -> bytes:
    return b"data: " + json.dumps(document).encode() + b"\n\n"


async def _events(
    first: dict[str, Any], chunks: AsyncGenerator[dict[str, Any], None], keepalive: float
) -> AsyncGenerator[bytes, None]:
    yield _event(first)
    paced = with_keepalives(chunks, keepalive)
    try:
        async for chunk in paced:
            yield KEEPALIVE if chunk is None else _event(chunk)
    except ToolmeshError as exc:
        yield _event(envelope(exc))
        return
    except Exception:
        log.exception("the chat stream failed")
        yield _event(envelope(InternalError("internal error; see the gateway's log")))
        return
    finally:
        await paced.aclose()
    yield b"data: [DONE]\n\n"


class ChatEvents(StreamingResponse):
    """The SSE answer; however it ends, the chunk iterator is closed, and with it the upstream
    request (Starlette stops sending when the client leaves but leaves iterators to the GC)."""

    def __init__(
        self, first: dict[str, Any], chunks: AsyncGenerator[dict[str, Any], None], keepalive: float
    ) -> None:
        self._chunks = chunks
        self._events = _events(first, chunks, keepalive)
        super().__init__(self._events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._events.aclose()
            await self._chunks.aclose()


def chat_routes(mesh: Mesh, proxy: ChatProxy | None) -> list[Route]:
    """The route; without a proxy (no [chat] upstream_url) it answers 503 saying how to turn it on."""

    async def completions(request: Request) -> Response:
        principal = caller(mesh, request)
        # The upstream model's work costs one unit; each mesh call of its rounds costs its own.
        await principal.spend()
        if proxy is None:
            raise Unavailable("the chat proxy is off: set [chat] upstream_url in toolmesh.toml")
        chat = ChatRequest(parse_json(await body(mesh, request), mesh.config.max_json_depth), proxy.config)
        # A model's rounds are not one call each: a key would name several different ones.
        options = dataclasses.replace(CallOptions.from_headers(request.headers), idempotency_key="")
        if not chat.stream:
            completion = await proxy.complete(principal, chat, options)
            return Response(json.dumps(completion).encode(), media_type="application/json")
        chunks = stream_turn(proxy, principal, chat, options)
        try:
            first = await anext(chunks)
        except BaseException:
            await chunks.aclose()
            raise
        return ChatEvents(first, chunks, mesh.config.stream_keepalive)

    return [Route(PATH, completions, methods=["POST"])]
