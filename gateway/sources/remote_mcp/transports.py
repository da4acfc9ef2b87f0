"""Which transport a remote MCP server is spoken to over (the runtime's `mcp_transport`):
Streamable HTTP (http_session.py), the deprecated HTTP+SSE (sse_session.py), or `auto`, the MCP
specification's backwards compatibility for clients: `initialize` is POSTed to the URL (after the
per-request era's `server/discover` probe), and when that fails with 400, 404 or 405 the URL is
taken for an HTTP+SSE stream (a GET expecting `text/event-stream` and an `endpoint` event). The
choice is made by the first request that reaches the server and kept (a restarted server is
reconnected over the same transport)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

import httpx

from toolmesh.gateway.sources.remote_mcp.http_session import Heard, McpHttpSession
from toolmesh.gateway.sources.remote_mcp.http_wire import McpHttpError
from toolmesh.gateway.sources.remote_mcp.sse_session import McpSseSession
from toolmesh.runtimes.mcp.server_asks import Answerer

log = logging.getLogger("toolmesh.sources")

#: The statuses of a refused POST after which `auto` tries the HTTP+SSE transport.
NOT_STREAMABLE = frozenset({400, 404, 405})

Transport = Literal["auto", "streamable-http", "sse"]


class McpSession(Protocol):
    """Requests to one remote MCP server, whatever the transport."""

    @property
    def server(self) -> dict[str, Any] | None:
        """What the server said of itself (`initialize`'s or `server/discover`'s result)."""

    @property
    def version(self) -> str | None:
        """The protocol revision agreed on with the server, once it is."""

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        heard: Heard | None = None,
        log_level: str | None = None,
        answer: Answerer | None = None,
    ) -> Any:
        """`method`'s result: see McpHttpSession.request."""

    async def close(self) -> None:
        """End the session (best effort)."""


def open_session(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    changed: Callable[[str], None] | None,
    roots: bool,
    transport: Transport,
) -> McpSession:
    """The session `transport` says, not yet connected (its first request connects)."""
    if transport == "sse":
        return McpSseSession(client, url, headers, changed, roots)
    streamable = McpHttpSession(client, url, headers, changed, roots)
    if transport == "streamable-http":
        return streamable
    return AutoSession(streamable, McpSseSession(client, url, headers, changed, roots))


class AutoSession:
    """Streamable HTTP, or HTTP+SSE when the server refuses the former's POST."""

    def __init__(self, streamable: McpHttpSession, sse: McpSseSession) -> None:
        self._streamable = streamable
        self._sse = sse
        self._chosen: McpSession | None = None
        self._choosing = asyncio.Lock()

    @property
    def transport(self) -> Transport:
        """The transport chosen; "auto" until a request has reached the server."""
        if self._chosen is None:
            return "auto"
        return "sse" if self._chosen is self._sse else "streamable-http"

    @property
    def server(self) -> dict[str, Any] | None:
        return None if self._chosen is None else self._chosen.server

    @property
    def version(self) -> str | None:
        return None if self._chosen is None else self._chosen.version

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        heard: Heard | None = None,
        log_level: str | None = None,
        answer: Answerer | None = None,
    ) -> Any:
        if self._chosen is None:
            async with self._choosing:
                if self._chosen is None:
                    return await self._choose(method, params, heard, log_level, answer)
        return await self._chosen.request(method, params, heard, log_level, answer)

    async def _choose(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        heard: Heard | None,
        log_level: str | None,
        answer: Answerer | None,
    ) -> Any:
        try:
            return await self._streamable.request(method, params, heard, log_level, answer)
        except McpHttpError as exc:
            if exc.status not in NOT_STREAMABLE or self._streamable.version is not None:
                raise
            refused = exc
        finally:
            if self._streamable.version is not None:
                self._chosen = self._streamable
        try:
            return await self._sse.request(method, params, heard, log_level, answer)
        except McpHttpError as exc:
            if not self._sse.opened:
                raise McpHttpError(
                    f"not a Streamable HTTP endpoint ({refused}), nor an HTTP+SSE one ({exc})", exc.status
                ) from None
            raise
        finally:
            if self._sse.opened:
                self._chosen = self._sse
                log.info("MCP server %s speaks the HTTP+SSE transport (2024-11-05)", self._sse.url)

    async def close(self) -> None:
        await self._streamable.close()
        await self._sse.close()
