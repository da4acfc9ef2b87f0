"""Where calls go: `servers` with variables, relative to the document's URL, none at all, and the
servers of a path or an operation; a document from a file without servers or `base_url`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.gateway.sources.openapi.echo import DOCUMENTS, echoed, openapi, runtime_for, serve_echo

OK = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
PATHS = {
    "/where": {"get": {"operationId": "where", "responses": OK}},
    "/uploads": {
        "servers": [{"url": "/echo/upload-host"}],
        "post": {"operationId": "upload", "responses": OK},
        "get": {"operationId": "ownServer", "servers": [{"url": "/echo/op-host/"}], "responses": OK},
    },
}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serve_echo() as url:
        yield url


async def test_no_servers_means_the_documents_own_origin(tmp_path: Path, origin: str) -> None:
    # As FastAPI serves its /openapi.json: no `servers`, which the spec reads as "/".
    DOCUMENTS["none"] = openapi(PATHS)
    async with runtime_for(f"{origin}/docs/none", tmp_path) as runtime:
        assert runtime.error is None
        assert (await echoed(runtime, "where"))["path"] == "/where"
        # A path's and an operation's own servers, relative to the document's URL too.
        assert (await echoed(runtime, "upload"))["path"] == "/echo/upload-host/uploads"
        assert (await echoed(runtime, "ownServer"))["path"] == "/echo/op-host/uploads"


async def test_relative_servers_and_variables(tmp_path: Path, origin: str) -> None:
    DOCUMENTS["relative"] = openapi(PATHS, servers=[{"url": "v1"}])
    async with runtime_for(f"{origin}/docs/relative", tmp_path) as runtime:
        assert (await echoed(runtime, "where"))["path"] == "/docs/v1/where"
    port = urlsplit(origin).port
    servers = [
        {
            "url": "http://{host}:{port}/{version}",
            "variables": {
                "host": {"default": "127.0.0.1"},
                "port": {"default": str(port)},
                "version": {"default": "v2", "enum": ["v1", "v2"]},
            },
        }
    ]
    async with runtime_for(openapi(PATHS, servers=servers), tmp_path) as runtime:
        assert (await echoed(runtime, "where"))["path"] == "/v2/where"
        # A file's relative path servers are relative to the runtime's server.
        assert (await echoed(runtime, "upload"))["path"] == "/echo/upload-host/uploads"


async def test_base_url_replaces_the_documents_servers_not_an_operations(tmp_path: Path, origin: str) -> None:
    document = openapi(PATHS, servers=[{"url": "https://api.example.invalid/v1"}])
    async with runtime_for(document, tmp_path, base_url=f"{origin}/staging") as runtime:
        assert (await echoed(runtime, "where"))["path"] == "/staging/where"
        assert (await echoed(runtime, "upload"))["path"] == "/echo/upload-host/uploads"


async def test_a_file_without_servers_or_base_url_is_a_clear_error(tmp_path: Path) -> None:
    async with runtime_for(openapi(PATHS), tmp_path) as runtime:
        assert runtime.specs == [] and not runtime.ready
        assert runtime.error is not None and "no base_url, and the document names no servers" in runtime.error
    async with runtime_for(openapi(PATHS, servers=[{"url": "/v1"}]), tmp_path) as runtime:
        assert runtime.error is not None and "server URL '/v1' is relative (to a file)" in runtime.error
