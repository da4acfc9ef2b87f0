"""The chat proxy's one stand-in: a scripted OpenAI-compatible upstream on uvicorn on loopback.

It answers from a script, records every request it got, and answers a request with
``stream: true`` as Server-Sent Events: a `Streamed` step says how (pieces, gaps, a hold
before the last piece, an error instead of the end), and a plain completion is streamed
in a few pieces.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import ChatConfig
from toolmesh.gateway.server import Gateway

MODEL = "scripted-model"


@dataclass
class Reply:
    """A scripted non-200 answer."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


Call = tuple[str, str, dict[str, Any]]


@dataclass
class Streamed:
    """A scripted streamed answer: content `pieces` `gap` seconds apart, then `calls`
    (id, name, arguments; the arguments in two pieces), then the finish and usage chunks.

    `hold`, when set, is awaited before the last piece; `error` ends the stream with an
    error event after the pieces instead.
    """

    pieces: list[str]
    calls: tuple[Call, ...] = ()
    gap: float = 0.0
    hold: asyncio.Event | None = None
    error: str | None = None


Step = dict[str, Any] | Reply | Streamed | Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Upstream:
    url: str
    script: list[Step] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorization: list[str | None] = field(default_factory=list)
    #: The client port of each request: the same port twice means a reused connection.
    ports: list[int] = field(default_factory=list)
    #: Streams sent to their end, and streams whose reader left before it.
    finished: int = 0
    abandoned: asyncio.Event = field(default_factory=asyncio.Event)


def streamed(completion: dict[str, Any]) -> Streamed:
    """A completion as a stream: its content in three pieces, then its tool calls."""
    message = completion["choices"][0]["message"]
    content = message.get("content") or ""
    third = -(-len(content) // 3) or 1
    calls = tuple(
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in message.get("tool_calls") or ()
    )
    return Streamed([content[i : i + third] for i in range(0, len(content), third)], calls)


async def sse(state: Upstream, step: Streamed, number: int, include_usage: bool) -> AsyncIterator[bytes]:
    """The Server-Sent Events of `step`, the upstream's `number`th answer."""
    base = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "created": number, "model": MODEL}

    def event(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return b"data: " + json.dumps({**base, "choices": choices, **extra}).encode() + b"\n\n"

    done = False
    try:
        yield event({"role": "assistant", "content": ""})
        for index, piece in enumerate(step.pieces):
            if step.gap:
                await asyncio.sleep(step.gap)
            if step.hold is not None and index == len(step.pieces) - 1:
                await step.hold.wait()
            yield event({"content": piece})
        if step.error is not None:
            yield b"data: " + json.dumps({"error": {"message": step.error, "type": "server_error"}}).encode()
            yield b"\n\n"
            done = True
            return
        for index, (id_, name, arguments) in enumerate(step.calls):
            text = json.dumps(arguments)
            first = {
                "index": index,
                "id": id_,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            yield event({"tool_calls": [first]})
            for part in (text[: len(text) // 2], text[len(text) // 2 :]):
                yield event({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        yield event({}, "tool_calls" if step.calls else "stop")
        if include_usage:
            yield event(None, usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
        yield b"data: [DONE]\n\n"
        done = True
    finally:
        if done:
            state.finished += 1
        else:
            state.abandoned.set()


def completion(content: str | None = None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A chat completion: an answer, or tool calls given as (id, name, arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            for id_, name, arguments in calls
        ]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    """The scripted OpenAI-compatible upstream on a free loopback port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    state = Upstream(f"http://127.0.0.1:{sock.getsockname()[1]}/v1")

    async def chat(request: Request) -> Response:
        body = await request.json()
        state.requests.append(body)
        state.authorization.append(request.headers.get("authorization"))
        state.ports.append(request.client.port if request.client else 0)
        if not state.script:
            return JSONResponse({"error": {"message": "the script ran out"}}, status_code=500)
        step = state.script.pop(0)
        if body.get("stream") is True and not isinstance(step, Reply):
            if not isinstance(step, Streamed):
                step = streamed(step(body) if callable(step) else step)
            include_usage = (body.get("stream_options") or {}).get("include_usage") is True
            events = sse(state, step, len(state.requests), include_usage)
            return StreamingResponse(events, media_type="text/event-stream")
        if isinstance(step, Streamed):
            raise AssertionError("a Streamed step answers only a request with stream: true")
        if isinstance(step, Reply):
            return JSONResponse(step.body, status_code=step.status, headers=step.headers)
        return JSONResponse(step(body) if callable(step) else step)

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_config=None, access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            raise AssertionError("the scripted upstream stopped while starting")
        await asyncio.sleep(0.01)
    yield state
    server.should_exit = True
    await task
    sock.close()


async def proxy(
    gateway_factory: StartGateway, upstream: Upstream, **chat: Any
) -> tuple[Gateway, openai.AsyncOpenAI]:
    """`chat` sets [chat]; its `gateway` entry (a dict), if any, sets [gateway]."""
    keys = chat.pop("keys", ())
    gateway_settings = chat.pop("gateway", {})
    settings = ChatConfig(upstream_url=upstream.url, api_key_env="UPSTREAM_KEY", **chat)
    environ = {"UPSTREAM_KEY": "upstream-secret", "CLIENT_KEY": "client-secret"}
    gateway = await gateway_factory(
        runtime("tools", "sample_tools", "mcp_tools"),
        chat=settings,
        keys=keys,
        environ=environ,
        **gateway_settings,
    )
    client = openai.AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key="client-secret", max_retries=0)
    return gateway, client


def tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


USER = [{"role": "user", "content": "What is 2 + 3?"}]
