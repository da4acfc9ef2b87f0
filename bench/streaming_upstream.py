"""The scripted upstream model of bench/chat_stream.py: an OpenAI-compatible
``/v1/chat/completions`` that answers after a fixed think time, streamed or whole.

With ``stream: true`` it sends the role chunk at once, the first token after
``--first-ms``, then one token every ``--every-ms`` (``--tokens`` in all), a finish
chunk, a usage chunk and ``[DONE]``. Without, it waits as long and answers the
whole completion. It prints ``{"http_port": N}`` when it is ready.

    .venv/bin/python bench/streaming_upstream.py [--first-ms 200] [--every-ms 20] [--tokens 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from collections.abc import AsyncIterator

import uvicorn
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MODEL = "bench-model"


def app(first: float, every: float, tokens: int) -> Starlette:
    words = [f"word{i} " for i in range(tokens)]
    usage = {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL}

    def event(delta: dict[str, object] | None, finish: str | None = None, **extra: object) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return b"data: " + json.dumps({**head, "choices": choices, **extra}).encode() + b"\n\n"

    async def stream() -> AsyncIterator[bytes]:
        yield event({"role": "assistant", "content": ""})
        for index, word in enumerate(words):
            await asyncio.sleep(first if index == 0 else every)
            yield event({"content": word})
        yield event({}, "stop")
        yield event(None, usage=usage)
        yield b"data: [DONE]\n\n"

    async def chat(request: Request) -> Response:
        body = await request.json()
        if body.get("stream"):
            return StreamingResponse(stream(), media_type="text/event-stream")
        await asyncio.sleep(first + every * (tokens - 1))
        message = {"role": "assistant", "content": "".join(words)}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return JSONResponse({**head, "object": "chat.completion", "choices": [choice], "usage": usage})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


async def serve(port: int, first: float, every: float, tokens: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(256)
    config = uvicorn.Config(
        app(first, every, tokens), log_config=None, access_log=False, lifespan="off", http="httptools"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
        await asyncio.sleep(0.01)
    print(json.dumps({"http_port": sock.getsockname()[1]}), flush=True)
    await task


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--first-ms", type=float, default=200.0)
    parser.add_argument("--every-ms", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=20)
    args = parser.parse_args()
    uvloop.run(serve(args.port, args.first_ms / 1000, args.every_ms / 1000, args.tokens))


if __name__ == "__main__":
    main()
