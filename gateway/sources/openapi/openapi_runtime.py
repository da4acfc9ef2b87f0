"""`OpenApiRuntime`: an OpenAPI service's operations, served by calling the service with httpx.

The gateway calls the service itself, with one pooled `httpx.AsyncClient` per runtime; there are
no pods. A document that cannot be read does not stop the gateway: the runtime logs why, offers
no functions and reports itself not ready, while the other runtimes serve.
"""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from pathlib import Path
from urllib.parse import quote

import httpx

from toolmesh.config.runtime_config import RuntimeConfig
from toolmesh.errors import (
    FunctionNotFound,
    FunctionTimeout,
    Unavailable,
)
from toolmesh.gateway.sources.base.service_runtime import GatewaySource, call_arguments
from toolmesh.gateway.sources.openapi.answers import exchange, what
from toolmesh.gateway.sources.openapi.document import read_document
from toolmesh.gateway.sources.openapi.operations import Operation, read_operations
from toolmesh.gateway.sources.openapi.request import build_request
from toolmesh.gateway.sources.openapi.schemas import DocumentError
from toolmesh.gateway.sources.openapi.servers import absolute, no_server_reason, server_url
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.results import Content, Result

log = logging.getLogger("toolmesh.sources")


class _KeepNoCookies(DefaultCookiePolicy):
    """The runtime's client keeps no cookie: one caller's session would go with the next's calls."""

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        return False


#: Connections kept open to one service.
MAX_CONNECTIONS = 100


class OpenApiRuntime(GatewaySource):
    """A runtime whose functions are the operations of an OpenAPI document."""

    def __init__(
        self, config: RuntimeConfig, headers: Mapping[str, str], directory: Path | None = None
    ) -> None:
        """`headers` go with every call: the runtime's `headers`, their values read at start-up."""
        assert config.openapi is not None
        super().__init__(config)
        self._directory = directory
        self._headers = dict(headers)
        self._operations: dict[str, Operation] = {}
        self._client: httpx.AsyncClient | None = None
        #: The runtime's own query parameters (`query`), encoded.
        self._query: list[str] = []

    @property
    def ready(self) -> bool:
        return self._client is not None

    async def start(self, *, strict: bool = False) -> None:
        """Read the document and serve its operations. When that fails, log why and serve nothing
        (or with `strict`, as a reload does, raise and keep what was served)."""
        config = self.config
        assert config.openapi is not None
        try:
            document = await read_document(
                config.openapi, self._directory, config.startup_timeout, config.ref_origins
            )
            query = _query(config)
            operations = read_operations(
                document, config.name, config.include, config.exclude, self._headers, query
            )
            base_url = config.base_url or server_url(document, config.openapi)
            if base_url is None:
                raise DocumentError(no_server_reason(document))
            operations = [_served(op, config.openapi, base_url) for op in operations]
        except DocumentError as exc:
            message = f"runtime {self.name!r}: OpenAPI document {config.openapi}: {exc}"
            if strict:
                raise Unavailable(message) from None
            log.error("%s; it serves no functions", message, extra={"runtime": self.name})
            self.error = message
            return
        client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=self._headers,
            cookies=CookieJar(_KeepNoCookies()),
            timeout=config.timeout,
            limits=httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS),
        )
        old, self._client = self._client, client
        self._query = [f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in query.items()]
        self._operations = {op.spec.name: op for op in operations}
        self.specs = [op.spec for op in operations]
        self.error = None
        if old is not None:
            await old.aclose()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def invoke(self, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        started = time.perf_counter()
        name = call.function.rpartition(".")[2]
        operation = self._operations.get(name)
        if operation is None or self._client is None:
            raise FunctionNotFound(f"runtime {self.name!r} has no function {call.function!r}")
        # The runtime's own limit, or less when the caller's deadline is nearer.
        limit = min(timeout, self.config.timeout)
        request = build_request(self._client, operation, call_arguments(call.arguments), limit, self._query)
        self._inflight += 1
        try:
            result = await exchange(self._client, operation, request)
        except httpx.TimeoutException:
            raise FunctionTimeout(f"{what(operation)} did not answer within {limit:g} s") from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"runtime {self.name!r}: {what(operation)} failed: {exc!r}") from None
        finally:
            self._inflight -= 1
        result.duration_ms = (time.perf_counter() - started) * 1000
        result.request_id = call.request_id
        return result

    async def stream(self, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        yield await self.invoke(call, timeout)


def _query(config: RuntimeConfig) -> dict[str, str]:
    """The runtime's `query`, its `{ env = ... }` values read already (sources/factory.py)."""
    query = {}
    for name, value in config.query.items():
        if not isinstance(value, str):
            raise DocumentError(f"query {name}: environment variable {value.env} was not read")
        query[name] = value
    return query


def _served(operation: Operation, location: str, base_url: str) -> Operation:
    """`operation` with its own server (if it has one) absolute: relative to the document's URL,
    or for a document read from a file, to the runtime's base URL."""
    if operation.server is None:
        return operation
    server = absolute(operation.server, location) or absolute(operation.server, base_url.rstrip("/") + "/")
    return replace(operation, server=server)
