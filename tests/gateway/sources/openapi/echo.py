"""A Starlette service that says what it was sent, and answers as real services do (204, text,
bytes, arrays, redirects, a proxy's HTML page...), for documents written as services write them.

`serve_echo()` runs it on uvicorn and yields its origin; `DOCUMENTS[name]` is served at
`/docs/<name>` (a document's `servers` may then be relative to its URL). `runtime_for` starts an
`OpenApiRuntime` on a document, `call` calls one of its functions.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.gateway.sources.openapi.shop import serve_app
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.sources.openapi import OpenApiRuntime
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.results import Result

DOCUMENTS: dict[str, dict[str, Any]] = {}
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
#: Where `/answers/elsewhere` redirects: another origin (set by the test that serves one).
ELSEWHERE: list[str] = []


async def echo(request: Request) -> JSONResponse:
    """What arrived: the method, the raw path and query, the headers, the body's text."""
    body = (await request.body()).decode()
    return JSONResponse(
        {
            "method": request.method,
            "path": request.scope["raw_path"].decode(),
            "query": request.scope["query_string"].decode(),
            "headers": {k: v for k, v in request.headers.items() if k not in ("host", "accept-encoding")},
            "body": body,
        }
    )


async def document(request: Request) -> JSONResponse:
    name = request.path_params["name"]
    if name not in DOCUMENTS:  # not published yet
        return JSONResponse({"error": f"no document {name}"}, status_code=404)
    return JSONResponse(DOCUMENTS[name])


async def answer(request: Request) -> Response:
    kind = request.path_params["kind"]
    if kind == "empty":
        return Response(status_code=204)
    if kind == "text":
        return Response("plain words", media_type="text/plain; charset=utf-8")
    if kind == "png":
        return Response(PNG, media_type="image/png")
    if kind == "charset":
        return Response('{"ok": "ü"}'.encode(), media_type="application/json; charset=utf-8")
    if kind == "problem":
        return Response('{"title": "bad"}', status_code=400, media_type="application/problem+json")
    if kind == "hal":
        return Response('{"id": 1}', media_type="application/hal+json")
    if kind == "array":
        return JSONResponse([{"id": 1}, {"id": 2}])
    if kind == "huge":
        return Response(b"x" * (2 * 1024 * 1024), media_type="text/plain")
    if kind == "moved":
        return RedirectResponse("/echo/moved-here?x=1", status_code=307)
    if kind == "elsewhere":
        return RedirectResponse(ELSEWHERE[0] + "/echo/stolen", status_code=302)
    if kind == "proxy":
        page = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>"
        page += "<hr><center>nginx</center>" + " " * 600 + "</body></html>"
        return Response(page, 502, media_type="text/html")
    raise AssertionError(kind)


app = Starlette(
    routes=[
        Route("/docs/{name}", document),
        Route("/answers/{kind}", answer, methods=["GET", "POST"]),
        Route("/{rest:path}", echo, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
    ]
)


@contextlib.contextmanager
def serve_echo() -> Iterator[str]:
    """The service on uvicorn on loopback, in a thread; yields its origin."""
    with serve_app(app) as origin:
        yield origin


def openapi(paths: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "echo", "version": "1"}, "paths": paths, **more}


@contextlib.asynccontextmanager
async def runtime_for(
    document: dict[str, Any] | str, tmp_path: Path, headers: dict[str, str] | None = None, **settings: Any
) -> AsyncIterator[OpenApiRuntime]:
    """A started runtime `echo` on `document` (written to a file) or on a document's URL."""
    if isinstance(document, dict):
        path = tmp_path / "echo.json"
        path.write_text(json.dumps(document))
        document = str(path)
    runtime = OpenApiRuntime(RuntimeConfig(name="echo", openapi=document, **settings), headers or {})
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.close()


async def call(runtime: OpenApiRuntime, name: str, arguments: dict[str, Any] | None = None) -> Result:
    return await runtime.invoke(Call(f"echo.{name}", json.dumps(arguments or {}).encode()), 10)


async def echoed(runtime: OpenApiRuntime, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """What the service was sent for a call."""
    result = await call(runtime, name, arguments)
    assert not result.is_error, result.error
    return result.structured
