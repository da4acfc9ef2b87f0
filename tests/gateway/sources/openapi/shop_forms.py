"""The shop's routes for bodies that are not JSON, cookies and headers, and their OpenAPI document;
and files served for documents whose `$ref`s name other files by URL. Mounted in shop.py's app."""

from __future__ import annotations

import hashlib
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from toolmesh.gateway.sources.openapi.operations import FORM, MULTIPART, TEXT

#: Files served at /files/<name>, for `$ref`s by URL (tests add their own).
FILES: dict[str, str] = {}


async def echo_form(request: Request) -> JSONResponse:
    """What arrived: its content type and each field's values (files by name, type and digest)."""
    kind = request.headers.get("content-type", "").split(";")[0]
    if kind == "application/json":
        return JSONResponse({"content_type": kind, "fields": await request.json()})
    fields: dict[str, list[Any]] = {}
    async with request.form() as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                data = await value.read()
                value = {
                    "filename": value.filename,
                    "type": value.content_type,
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            fields.setdefault(name, []).append(value)
    return JSONResponse({"content_type": kind, "fields": fields})


async def echo_text(request: Request) -> JSONResponse:
    return JSONResponse(
        {"content_type": request.headers.get("content-type"), "text": (await request.body()).decode()}
    )


async def echo_bytes(request: Request) -> JSONResponse:
    data = await request.body()
    return JSONResponse(
        {"content_type": request.headers.get("content-type"), "sha256": hashlib.sha256(data).hexdigest()}
    )


async def echo_cookies(request: Request) -> JSONResponse:
    response = JSONResponse({"cookie": request.headers.get("cookie")})
    # A session the gateway must not keep for the next caller.
    response.set_cookie("session", "set-by-the-service")
    return response


async def echo_headers(request: Request) -> JSONResponse:
    names = ("x-trace", "x-api-key", "accept", "authorization", "cookie")
    return JSONResponse({name: request.headers.get(name) for name in names})


async def serve_file(request: Request) -> Response:
    text = FILES.get(request.path_params["name"])
    if text is None:
        return PlainTextResponse("no such file", status_code=404)
    return PlainTextResponse(text, media_type="application/yaml")


ROUTES = [
    Route("/api/forms/{what}", echo_form, methods=["POST"]),
    Route("/api/text", echo_text, methods=["POST"]),
    Route("/api/text", echo_text, methods=["PUT"]),
    Route("/api/bytes", echo_bytes, methods=["POST"]),
    Route("/api/cookies", echo_cookies, methods=["GET"]),
    Route("/api/headers", echo_headers, methods=["GET"]),
    Route("/files/{name:path}", serve_file, methods=["GET"]),
]

OK = {"200": {"description": "what arrived"}}


def _form(media_type: str, schema: dict[str, Any], required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {media_type: {"schema": schema}}}


LOGIN = {
    "type": "object",
    "required": ["user"],
    "properties": {
        "user": {"type": "string"},
        "remember": {"type": "boolean"},
        "scopes": {"type": "array", "items": {"type": "string"}},
    },
}

FORMS_DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "shop forms", "version": "1"},
    "paths": {
        "/forms/login": {
            "post": {"operationId": "login", "requestBody": _form(FORM, LOGIN), "responses": OK}
        },
        "/forms/upload": {
            "post": {
                "operationId": "upload",
                "requestBody": {
                    "required": True,
                    "content": {
                        MULTIPART: {
                            "schema": {
                                "type": "object",
                                "required": ["photo"],
                                "properties": {
                                    "title": {"type": "string"},
                                    "photo": {
                                        "type": "string",
                                        "format": "binary",
                                        "description": "The photo.",
                                    },
                                    "extra": {
                                        "type": "array",
                                        "items": {"type": "string", "contentMediaType": "text/csv"},
                                    },
                                    "meta": {"type": "object"},
                                },
                            },
                            "encoding": {"photo": {"contentType": "image/png"}},
                        }
                    },
                },
                "responses": OK,
            }
        },
        # JSON is chosen when an operation offers it beside a form.
        "/forms/both": {
            "post": {
                "operationId": "either",
                "requestBody": {
                    "content": {
                        FORM: {"schema": LOGIN},
                        "application/json": {"schema": LOGIN},
                    }
                },
                "responses": OK,
            }
        },
        "/text": {
            "post": {"operationId": "note", "requestBody": _form(TEXT, {"type": "string"}), "responses": OK},
            # Other text is text too; a range names the bytes' type only vaguely.
            "put": {
                "operationId": "xml",
                "requestBody": {"content": {"application/xml": {}}},
                "responses": OK,
            },
        },
        "/bytes": {
            "post": {"operationId": "picture", "requestBody": {"content": {"image/*": {}}}, "responses": OK}
        },
        "/cookies": {
            "get": {
                "operationId": "cookies",
                "parameters": [
                    {"name": "flavour", "in": "cookie", "required": True, "schema": {"type": "string"}},
                    {
                        "name": "ids",
                        "in": "cookie",
                        "schema": {"type": "array", "items": {"type": "integer"}},
                    },
                ],
                "responses": OK,
            }
        },
        "/headers": {
            "get": {
                "operationId": "headers",
                "parameters": [
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    # The spec ignores these three; X-Api-Key is the runtime's own header.
                    {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                    {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                    {"name": "Content-Type", "in": "header", "schema": {"type": "string"}},
                    {"name": "X-Api-Key", "in": "header", "required": True, "schema": {"type": "string"}},
                ],
                "responses": OK,
            }
        },
    },
}
