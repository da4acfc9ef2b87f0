"""External `$ref`s: the files a document refers to, read once at start-up and bundled into it.

A `$ref` such as `schemas/pet.yaml#/Pet` or `https://host/common.json#/components/schemas/X` is
resolved against the location of the file it sits in (a path: its folder; a URL: the URL), read
(JSON or YAML) and stored under the document's `x-toolmesh-external` key; the reference is rewritten
to point there (`#/x-toolmesh-external/pet/Pet`), so that everything after this module reads one
document with only local references. References inside a referred file are resolved relative to
that file; a file is read once however often (or circularly) it is referred to.

No surprise fetches: a URL document's references may fetch from its own origin only, a file
document's may read files only, unless `origins` names more origins; a URL document never reads
local files. One document pulls at most `MAX_REF_FILES` files and `MAX_REF_BYTES` bytes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import httpx
import yaml

from toolmesh.gateway.sources.openapi.schemas import EXTERNAL, DocumentError, pointer

#: How many files one document's references may pull, all together.
MAX_REF_FILES = 64
#: How many bytes those files may hold, all together.
MAX_REF_BYTES = 8 * 1024 * 1024

Fetch = Callable[[str, int], Awaitable[bytes]]


#: libyaml's loader when PyYAML was built with it (tens of times faster than the pure one).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_text(text: str | bytes) -> Any:
    """JSON or YAML text's value; yaml.YAMLError when it is neither. JSON is YAML, but a JSON
    parser reads a generated document of a few MiB in milliseconds, a YAML one in seconds."""
    try:
        return json.loads(text)
    except ValueError:
        return yaml.load(text, Loader=_YAML_LOADER)


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def origin(url: str) -> tuple[str, str, int]:
    """A URL's origin: scheme, host and port (the scheme's default when none is written)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


async def bundle(
    document: dict[str, Any],
    location: str,
    origins: Sequence[str],
    client: httpx.AsyncClient | None,
    timeout: float,
) -> None:
    """Read the files `document`'s references name and bundle them into it (in place).

    `location` is where the document was read from (an absolute path, or its URL after
    redirects); `client` fetches URLs (the document's own client, so with its timeout)."""
    allowed = {origin(o) for o in origins}
    if is_url(location):
        allowed.add(origin(location))
    await _Bundler(document, location, allowed, client, timeout).run()


class _Bundler:
    def __init__(
        self,
        document: dict[str, Any],
        location: str,
        allowed: set[tuple[str, str, int]],
        client: httpx.AsyncClient | None,
        timeout: float,
    ) -> None:
        self._document = document
        self._root = location
        self._allowed = allowed
        self._client = client
        self._timeout = timeout
        self._keys: dict[str, str] = {}  # a file's location -> its key under EXTERNAL
        self._files: dict[str, Any] = {}  # key -> the file's contents
        self._bytes = 0
        # (the rewritten node, the reference as written, the file it was written in)
        self._rewritten: list[tuple[dict[str, Any], str, str]] = []

    async def run(self) -> None:
        queue: list[tuple[Any, str]] = [(self._document, self._root)]
        while queue:
            node, location = queue.pop()
            for ref_node in _references(node):
                ref = ref_node["$ref"]
                local = await self._rewrite(ref, location, queue)
                if local is not None:
                    ref_node["$ref"] = local
                    self._rewritten.append((ref_node, ref, location))
        if self._files:
            self._document[EXTERNAL] = self._files
        for node, ref, location in self._rewritten:
            try:
                pointer(self._document, node["$ref"])
            except DocumentError:
                where = "" if location == self._root else f" (in {location})"
                raise DocumentError(f"$ref {ref!r}{where} points at nothing in its file") from None

    async def _rewrite(self, ref: str, base: str, queue: list[tuple[Any, str]]) -> str | None:
        """The local reference that replaces `ref` (written in `base`), or None to keep it."""
        address, _, fragment = ref.partition("#")
        fragment = unquote(fragment)
        if fragment and not fragment.startswith("/"):
            raise DocumentError(f"$ref {ref!r}: only JSON pointers ('#/...') are read, not anchors")
        if not address:
            if base == self._root:
                return None
            return f"#/{EXTERNAL}/{self._keys[base]}{fragment}"
        target = self._target(ref, address, base)
        if target == self._root:
            return f"#{fragment}"
        key = self._keys.get(target)
        if key is None:
            content = await self._read(ref, target)
            key = self._key(target)
            self._keys[target] = key
            self._files[key] = content
            queue.append((content, target))
        return f"#/{EXTERNAL}/{key}{fragment}"

    def _target(self, ref: str, address: str, base: str) -> str:
        """The location (absolute path or URL) of the file `address` names, checked."""
        scheme = urlsplit(address).scheme.lower()
        if is_url(base) or scheme in ("http", "https"):
            target = urljoin(base, address) if is_url(base) else address
            if not is_url(target):
                raise DocumentError(f"$ref {ref!r}: a document read from a URL reads no local files")
            if origin(target) not in self._allowed:
                raise DocumentError(
                    f"$ref {ref!r}: {target} is not from the document's origin (list other origins "
                    "in the runtime's `ref_origins`)"
                )
            return target.partition("#")[0]
        if scheme:
            raise DocumentError(f"$ref {ref!r}: only relative paths and http(s) URLs are read")
        return os.path.normpath(os.path.join(os.path.dirname(base), unquote(address)))

    def _key(self, location: str) -> str:
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", PurePath(urlsplit(location).path).stem) or "file"
        key, n = stem, 1
        while key in self._files:
            n += 1
            key = f"{stem}_{n}"
        return key

    async def _read(self, ref: str, location: str) -> Any:
        if len(self._files) >= MAX_REF_FILES:
            raise DocumentError(f"$ref {ref!r}: the document refers to more than {MAX_REF_FILES} files")
        budget = MAX_REF_BYTES - self._bytes
        try:
            if is_url(location):
                data = await self._fetch(location, budget)
            else:
                data = await asyncio.to_thread(_read_file, location, budget)
        except DocumentError as exc:
            raise DocumentError(f"$ref {ref!r}: {exc}") from None
        self._bytes += len(data)
        try:
            return load_text(data)
        except yaml.YAMLError as exc:
            raise DocumentError(f"$ref {ref!r}: {location} is not JSON or YAML: {exc}") from None

    async def _fetch(self, url: str, budget: int) -> bytes:
        client = self._client
        if client is None:
            client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=True)
        try:
            async with client.stream("GET", url) as response:
                if origin(str(response.url)) not in self._allowed:
                    raise DocumentError(f"{url} redirected to {response.url}, another origin")
                if response.status_code != 200:
                    raise DocumentError(f"fetching {url} answered {response.status_code}")
                chunks = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > budget:
                        raise DocumentError(_too_big(url))
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx.HTTPError as exc:
            raise DocumentError(f"cannot fetch {url}: {exc!r}") from None
        finally:
            if client is not self._client:
                await client.aclose()


def _read_file(path: str, budget: int) -> bytes:
    try:
        with open(path, "rb") as file:
            data = file.read(budget + 1)
    except OSError as exc:
        raise DocumentError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > budget:
        raise DocumentError(_too_big(path))
    return data


def _too_big(location: str) -> str:
    return f"{location}: the files the document refers to hold more than {MAX_REF_BYTES} bytes"


def _references(node: Any) -> Iterator[dict[str, Any]]:
    """Every object with a string `$ref` in `node`, each once (YAML aliases share objects)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                yield item
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
