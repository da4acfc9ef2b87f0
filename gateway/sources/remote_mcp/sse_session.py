"""JSON-RPC with one MCP server over the deprecated HTTP+SSE transport (2024-11-05): one event
stream per runtime (sse_connection.py), shared by all its calls, each answer matched by id.

The stream is opened and the handshake made (`initialize`, 2024-11-05 to 2025-11-25) by the first
request, and again by the first request after the stream was lost (a server restart): the requests
waiting on a lost stream fail (they may have run: McpHttpError, a 503 naming the runtime), and a
request that never reached the server's session (its POST refused with 404, or not connected) is
sent again once on a new stream.

Everything the server says outside its answers comes on the same stream, with nothing saying whose
it is but what the request carried:
- progress for a call's token: the gateway gives each request its own token (the JSON-RPC id), so
  calls whose callers chose the same one are told apart, and gives the caller's back;
- log messages, and the server's requests (elicitation, sampling, roots), go to the call in flight
  while it is the only one (as on stdio and on a Streamable HTTP session's standalone stream); with
  several, log messages are dropped (never shown to another caller) and requests declined;
- `list_changed` notifications go to `changed`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from toolmesh.gateway.sources.remote_mcp.http_session import CLIENT_INFO, PROTOCOL_VERSIONS, Heard
from toolmesh.gateway.sources.remote_mcp.http_wire import McpHttpError
from toolmesh.gateway.sources.remote_mcp.server_requests import list_changed, reply_to
from toolmesh.gateway.sources.remote_mcp.sse_connection import (
    HEARTBEAT,
    PING_TIMEOUT,
    NotDelivered,
    SseConnection,
    StreamLost,
)
from toolmesh.runtimes.mcp.server_asks import Answerer, capabilities

log = logging.getLogger("toolmesh.sources")


@dataclasses.dataclass
class _Request:
    """A request waiting for its answer, and what hears and answers the server meanwhile."""

    heard: Heard | None
    answer: Answerer | None
    #: The progress token its caller chose (the server is given the request's id instead).
    token: Any = None


class McpSseSession:
    """Requests to one HTTP+SSE MCP server (`url`: its event stream), on one shared stream."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        changed: Callable[[str], None] | None = None,
        roots: bool = False,
        *,
        heartbeat: float = HEARTBEAT,
        ping_timeout: float = PING_TIMEOUT,
    ) -> None:
        """As McpHttpSession's; `heartbeat` and `ping_timeout` as sse_connection.py says."""
        self._client = client
        #: The event stream's URL.
        self.url = url
        #: Whether a stream has ever opened (the server speaks this transport).
        self.opened = False
        self._headers = dict(headers)
        self._changed = changed
        self._roots = roots
        self._heartbeat = heartbeat
        self._ping_timeout = ping_timeout
        self._ids = itertools.count(1)
        self._connection: SseConnection | None = None
        self._connecting = asyncio.Lock()
        self._version: str | None = None
        #: The requests waiting for answers, by id (unique across the session's streams).
        self._requests: dict[int, _Request] = {}
        #: What the server said of itself in `initialize`.
        self.server: dict[str, Any] | None = None

    @property
    def version(self) -> str | None:
        """The protocol revision agreed on with the server, while a stream is open."""
        return self._version

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        heard: Heard | None = None,
        log_level: str | None = None,
        answer: Answerer | None = None,
    ) -> Any:
        """As McpHttpSession.request (`log_level` is the per-request era's: unused here)."""
        stale: SseConnection | None = None
        for attempt in range(2):
            connection = await self._connected(stale)
            try:
                return await self._request(connection, method, params, heard, answer)
            except NotDelivered as exc:
                # It never reached the server's session: a new stream, and once more.
                if attempt:
                    raise McpHttpError(f"{method} could not be sent: {exc}") from None
                stale = connection
            except StreamLost as exc:
                raise McpHttpError(f"{method}: the server's event stream was lost ({exc})") from None
        raise AssertionError("unreachable")

    async def close(self) -> None:
        connection, self._connection, self._version = self._connection, None, None
        if connection is not None:
            await connection.close()

    async def _connected(self, stale: SseConnection | None) -> SseConnection:
        """The open stream, opened (and the handshake made) when there is none, it was lost, or it
        is `stale`."""
        async with self._connecting:
            current = self._connection
            if current is not None and current.lost is None and current is not stale:
                return current
            self._connection, self._version = None, None
            if current is not None:
                await current.close()
            connection = SseConnection(
                self._client,
                self.url,
                self._headers,
                self._ids,
                self._dispatch,
                heartbeat=self._heartbeat,
                ping_timeout=self._ping_timeout,
            )
            try:
                await connection.open()
                self.opened = True
                await self._initialize(connection)
            except NotDelivered as exc:
                await connection.close()
                raise McpHttpError(f"initialize could not be sent: {exc}") from None
            except StreamLost as exc:
                await connection.close()
                raise McpHttpError(f"the server's event stream was lost ({exc})") from None
            except BaseException:
                await connection.close()
                raise
            self._connection = connection
            return connection

    async def _initialize(self, connection: SseConnection) -> None:
        result = await connection.call(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSIONS[0],
                "capabilities": capabilities(self._roots),
                "clientInfo": CLIENT_INFO,
            },
        )
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in PROTOCOL_VERSIONS:
            raise McpHttpError(
                f"the server speaks protocol {version!r}, not one of {', '.join(PROTOCOL_VERSIONS)}"
            )
        await connection.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.server = result
        self._version = version

    async def _request(
        self,
        connection: SseConnection,
        method: str,
        params: Mapping[str, Any] | None,
        heard: Heard | None,
        answer: Answerer | None,
    ) -> Any:
        ident = next(self._ids)
        request = _Request(heard, answer)
        meta = (params or {}).get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            request.token = meta["progressToken"]
            params = {**(params or {}), "_meta": {**meta, "progressToken": ident}}
        self._requests[ident] = request
        try:
            return await connection.call(method, params, ident)
        finally:
            del self._requests[ident]

    def _only_call(self) -> tuple[int, _Request] | None:
        """The one call in flight (a request its caller can be asked during), if only one is."""
        calls = [(ident, request) for ident, request in self._requests.items() if request.answer is not None]
        return calls[0] if len(calls) == 1 else None

    def _dispatch(self, connection: SseConnection, message: dict[str, Any]) -> None:
        """What the server sent that is not an answer: see the module's doc."""
        method = message.get("method")
        if not isinstance(method, str):
            return
        if "id" in message:
            connection.spawn(self._answer_server(connection, message))
            return
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if (changed := list_changed(message)) is not None:
            if self._changed is not None:
                self._changed(changed)
        elif method == "notifications/progress":
            token = params.get("progressToken")
            request = self._requests.get(token) if isinstance(token, int) else None
            if request is not None and request.heard is not None:
                request.heard({**message, "params": {**params, "progressToken": request.token}})
        elif method == "notifications/message":
            only = self._only_call()
            if only is not None and only[1].heard is not None:
                only[1].heard(message)

    async def _answer_server(self, connection: SseConnection, message: dict[str, Any]) -> None:
        """A request of the server's, answered by the one call in flight's caller (or declined);
        when that caller must answer first, the call ends (InputRequired) and the server is told
        it is cancelled."""
        only = self._only_call()
        ident, answer = (only[0], only[1].answer) if only is not None else (None, None)
        reply, ended = reply_to(message, answer, self._roots)
        if ended is not None and ident is not None:
            # Stopped before the server hears of it: its error answer to the call is not the outcome.
            connection.fail(ident, ended)
        try:
            await connection.post(reply)
        except (McpHttpError, NotDelivered) as exc:
            log.warning("could not answer an MCP server's %s: %s", message.get("method"), exc)
        if ended is not None and ident is not None:
            await connection.notify("notifications/cancelled", {"requestId": ident})
