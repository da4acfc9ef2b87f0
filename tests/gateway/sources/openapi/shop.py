"""A small REST service (Starlette) and its hand-written OpenAPI 3.0 document, for the tests and the
benchmark: a recursive `$ref` (a category tree), an over-long operationId, `nullable`, an enum,
path/query/header parameters, a JSON body, a 404, and an operation tagged to be left out.
shop_forms.py adds forms, text, cookies and files to refer to by URL."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from tests.gateway.sources.openapi.shop_forms import ROUTES as FORM_ROUTES

LONG_OPERATION_ID = "getTheWholeCategoryTreeIncludingEverySubcategoryRecursivelyForTheGivenCategoryIdentifier"

PETS = {1: {"id": 1, "name": "Rex", "kind": "dog", "nickname": None}}


async def list_pets(request: Request) -> JSONResponse:
    limit = int(request.query_params.get("limit", "100"))
    kind = request.query_params.get("kind")
    pets = [p for p in PETS.values() if kind is None or p["kind"] == kind]
    return JSONResponse(pets[:limit])


async def get_pet(request: Request) -> JSONResponse:
    pet = PETS.get(int(request.path_params["pet_id"]))
    if pet is None:
        return JSONResponse({"error": f"no pet {request.path_params['pet_id']}"}, status_code=404)
    return JSONResponse({**pet, "asked_by": request.headers.get("x-asked-by")})


async def create_pet(request: Request) -> JSONResponse:
    body = await request.json()
    pet = {"id": len(PETS) + 1, "nickname": None, **body}
    return JSONResponse(pet, status_code=201)


async def category_tree(request: Request) -> JSONResponse:
    root = int(request.path_params["category_id"])
    leaf: dict[str, Any] = {"id": root * 10, "name": "leaf", "children": []}
    return JSONResponse({"id": root, "name": "root", "children": [leaf]})


async def slow(request: Request) -> JSONResponse:
    await asyncio.sleep(float(request.query_params["seconds"]))
    return JSONResponse({"slept": True})


async def whoami(request: Request) -> JSONResponse:
    return JSONResponse({"authorization": request.headers.get("authorization")})


async def document_31(request: Request) -> JSONResponse:
    """The document as 3.1 with a relative server URL, so the base URL comes from where it was read."""
    pet = DOCUMENT["components"]["schemas"]["NewPet"]["properties"]
    nickname = {"type": ["string", "null"]}
    schemas = {**DOCUMENT["components"]["schemas"]}
    schemas["NewPet"] = {**schemas["NewPet"], "properties": {**pet, "nickname": nickname}}
    components = {**DOCUMENT["components"], "schemas": schemas}
    return JSONResponse(
        {**DOCUMENT, "openapi": "3.1.0", "servers": [{"url": "/api"}], "components": components}
    )


async def delete_pet(request: Request) -> PlainTextResponse:
    return PlainTextResponse("deleted")


app = Starlette(
    routes=[
        Route("/api/pets", list_pets, methods=["GET"]),
        Route("/api/pets", create_pet, methods=["POST"]),
        Route("/api/pets/{pet_id}", get_pet, methods=["GET"]),
        Route("/api/pets/{pet_id}", delete_pet, methods=["DELETE"]),
        Route("/api/categories/{category_id}/tree", category_tree, methods=["GET"]),
        Route("/api/whoami", whoami, methods=["GET"]),
        Route("/api/slow", slow, methods=["GET"]),
        Route("/openapi.json", document_31, methods=["GET"]),
        *FORM_ROUTES,
    ]
)

PET_ID = {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "shop", "version": "1"},
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "tags": ["pets"],
                "summary": "List the pets.",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer"},
                        "description": "At most.",
                    },
                    {"name": "kind", "in": "query", "schema": {"$ref": "#/components/schemas/Kind"}},
                ],
                "responses": {
                    "200": {
                        "description": "pets",
                        "content": {
                            "application/json": {
                                "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}
                            }
                        },
                    }
                },
            },
            "post": {
                "operationId": "create pet!",
                "tags": ["pets"],
                "description": "Add a pet to the shop.",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}},
                },
                "responses": {"201": {"$ref": "#/components/responses/OnePet"}},
            },
        },
        "/pets/{petId}": {
            "parameters": [{"$ref": "#/components/parameters/PetId"}],
            "get": {
                "operationId": "getPet",
                "tags": ["pets"],
                "summary": "One pet by id.",
                "parameters": [{"name": "X-Asked-By", "in": "header", "schema": {"type": "string"}}],
                "responses": {"200": {"$ref": "#/components/responses/OnePet"}},
            },
            "delete": {
                "operationId": "deletePet",
                "tags": ["admin"],
                "responses": {"200": {"description": "ok"}},
            },
        },
        "/categories/{categoryId}/tree": {
            "get": {
                "operationId": LONG_OPERATION_ID,
                "parameters": [
                    {"name": "categoryId", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "responses": {
                    "200": {
                        "description": "the tree",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Category"}}
                        },
                    }
                },
            }
        },
        "/whoami": {"get": {"responses": {"200": {"description": "who the service thinks calls"}}}},
        "/slow": {
            "get": {
                "operationId": "slow",
                "tags": ["admin"],
                "parameters": [
                    {"name": "seconds", "in": "query", "required": True, "schema": {"type": "number"}}
                ],
                "responses": {"200": {"description": "slept"}},
            }
        },
    },
    "components": {
        "parameters": {"PetId": PET_ID},
        "responses": {
            "OnePet": {
                "description": "a pet",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
            }
        },
        "schemas": {
            "Kind": {"type": "string", "enum": ["cat", "dog"]},
            "NewPet": {
                "type": "object",
                "required": ["name", "kind"],
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"$ref": "#/components/schemas/Kind"},
                    "nickname": {"type": "string", "nullable": True},
                },
            },
            "Pet": {
                "allOf": [
                    {"$ref": "#/components/schemas/NewPet"},
                    {"type": "object", "properties": {"id": {"type": "integer"}}},
                ]
            },
            "Category": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Category"}},
                },
            },
        },
    },
}


def free_port_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextlib.contextmanager
def serve_shop() -> Iterator[str]:
    """The shop on uvicorn on loopback, in a thread; yields its base URL (…/api)."""
    with serve_app(app) as origin:
        yield f"{origin}/api"


@contextlib.contextmanager
def serve_app(served: Starlette) -> Iterator[str]:
    """`served` on uvicorn on loopback, in a thread; yields its origin."""
    sock = free_port_socket()
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
