"""Baseline (d) of bench/gateway_invoke.py: a bare Starlette route on uvicorn.

It reads the body and answers with the JSON the gateway returns for a no-op
call, on the same server settings as the gateway (httptools, uvloop, no access
log), so the difference to the gateway is the gateway's own work.

    .venv/bin/python bench/plain_starlette.py [--port 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket

import uvicorn
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ANSWER = (
    b'{"is_error":false,"content":[],"structured":null,"request_id":"' + b"0" * 32 + b'",'
    b'"timing":{"queued_ms": 0.02, "duration_ms": 0.05}}'
)


async def invoke(request: Request) -> Response:
    await request.body()
    return Response(ANSWER, media_type="application/json")


app = Starlette(routes=[Route("/v1/functions/{name}/invoke", invoke, methods=["POST"])])


async def serve(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, http="httptools")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
        await asyncio.sleep(0.01)
    print(json.dumps({"event": "ready", "pid": os.getpid(), "http_port": sock.getsockname()[1]}), flush=True)
    await task


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=0)
    uvloop.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
