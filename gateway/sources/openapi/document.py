"""Reading an OpenAPI document: from a file or a URL, JSON or YAML, 3.0 or 3.1."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from toolmesh.gateway.sources.openapi.references import bundle, is_url, load_text
from toolmesh.gateway.sources.openapi.schemas import DocumentError


async def read_document(
    location: str, directory: Path | None, timeout: float, ref_origins: Sequence[str] = ()
) -> dict[str, Any]:
    """The document at `location` (an http(s) URL, or a path relative to `directory`), with the
    files its `$ref`s name bundled into it (see references.py)."""
    if is_url(location):
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client:
            try:
                response = await client.get(location)
            except httpx.HTTPError as exc:
                raise DocumentError(f"cannot fetch {location}: {exc!r}") from None
            if response.status_code != 200:
                raise DocumentError(f"fetching {location} answered {response.status_code}")
            document = parse_document(response.text)
            # Relative references are resolved against where the document was found.
            await bundle(document, str(response.url), ref_origins, client, timeout)
        return document
    text, path = await asyncio.to_thread(_read_file, location, directory)
    document = parse_document(text)
    await bundle(document, path, ref_origins, None, timeout)
    return document


def _read_file(location: str, directory: Path | None) -> tuple[str, str]:
    """The file's text and its absolute path."""
    path = Path(location).expanduser()
    if directory is not None:
        path = directory / path
    try:
        return path.read_text(encoding="utf-8"), os.path.abspath(path)
    except OSError as exc:
        raise DocumentError(f"cannot read {path}: {exc.strerror or exc}") from None


def parse_document(text: str) -> dict[str, Any]:
    try:
        document = load_text(text)
    except yaml.YAMLError as exc:
        raise DocumentError(f"not JSON or YAML: {exc}") from None
    if not isinstance(document, dict):
        raise DocumentError("not an OpenAPI document (not an object)")
    if "swagger" in document and "openapi" not in document:
        # Converting 2.0 (its bodies, formData, produces/consumes) is a tool's job, not start-up's.
        raise DocumentError(
            f"a Swagger {document['swagger']} document: toolmesh reads OpenAPI 3.0 and 3.1; convert it "
            "first (e.g. `npx swagger2openapi swagger.json -o openapi.json`, or the service's 3.x document)"
        )
    version = str(document.get("openapi", ""))
    if not version.startswith(("3.0", "3.1")):
        found = f"'openapi: {version}'" if version else "no 'openapi' field"
        raise DocumentError(f"not an OpenAPI 3.0 or 3.1 document ({found})")
    if not isinstance(document.get("paths") or {}, dict):
        raise DocumentError("'paths' must be an object")
    return document
