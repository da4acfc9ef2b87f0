"""The wire of the HTTP+SSE transport (2024-11-05) as the gateway reads it: a stream's events, by
name, with the time the server last said anything (a comment, a server's own heartbeat, counts),
and the `endpoint` event's URL, resolved against the stream's and held to its origin."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx

from toolmesh.gateway.sources.remote_mcp.http_wire import McpHttpError

#: The default port of each scheme, so that "http://host" and "http://host:80" are one origin.
DEFAULT_PORTS = {"http": 80, "https": 443}


class EventReader:
    """The events of one `text/event-stream` response, as (name, data) pairs."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        #: When the server last sent a line, of any kind (time.monotonic()).
        self.heard_at = time.monotonic()

    async def events(self) -> AsyncIterator[tuple[str, str]]:
        name, data = "", list[str]()
        async for line in self._response.aiter_lines():
            self.heard_at = time.monotonic()
            if not line:
                if data:
                    yield name or "message", "\n".join(data)
                name, data = "", []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                name = line[6:].strip()
            # Comments (": ping") and `id:`/`retry:` lines: only that the server is there.


def endpoint_url(stream_url: str, endpoint: str) -> str:
    """Where to POST: the `endpoint` event's URL, relative to the stream's. Refused on another
    origin (scheme, host, port): the runtime's `headers` go with every POST, and a server's event
    must not send them elsewhere (the TypeScript SDK's client refuses it too)."""
    base = httpx.URL(stream_url)
    try:
        target = base.join(endpoint.strip())
    except httpx.InvalidURL:
        raise McpHttpError(f"the server's endpoint event names no URL: {endpoint[:200]!r}") from None
    if _origin(target) != _origin(base):
        raise McpHttpError(
            f"the server's endpoint event names {target}, another origin than {stream_url}: refused"
        )
    return str(target)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or DEFAULT_PORTS.get(url.scheme)
