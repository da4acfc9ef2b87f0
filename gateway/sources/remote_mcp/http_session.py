"""JSON-RPC with one MCP server over Streamable HTTP, on one pooled httpx client.

Lean on purpose (no SDK session task group per server): each request is one POST whose answer is
either a JSON body or an event stream ending with the response. The session (`Mcp-Session-Id`) is
made by `initialize` on first use and made again when the server forgets it (404) or cannot be
reached; a request that never reached the server is sent again once. The notifications the
server sends while it answers (progress, log messages) go to the request's `heard`. Requests it
makes of the client (sampling, elicitation, roots) are declined, as the SDK's client declines them
when given no callbacks: they do not travel on to the gateway's caller yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

log = logging.getLogger("toolmesh.sources")

#: The handshake revisions the gateway speaks, newest first (it offers the first).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
CLIENT_INFO = {"name": "toolmesh-gateway", "version": "1"}
#: JSON-RPC's "method not found", the answer to requests the gateway does not serve.
METHOD_NOT_FOUND = -32601


#: Receives a notification the server sent while answering a request (its JSON-RPC message).
Heard = Callable[[dict[str, Any]], None]


class McpHttpError(Exception):
    """The server could not be reached or answered outside the protocol."""


class McpRpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class _SessionGone(Exception):
    """The server no longer knows the session (404 on a request that named it)."""


class McpHttpSession:
    """Requests to one Streamable HTTP MCP endpoint, its session kept across calls."""

    def __init__(self, client: httpx.AsyncClient, url: str, headers: Mapping[str, str]) -> None:
        self._client = client
        self._url = url
        self._headers = {
            **headers,
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self._ids = itertools.count(1)
        self._session: str | None = None
        self._version: str | None = None
        self._initialized: asyncio.Lock = asyncio.Lock()
        #: What the server said of itself in `initialize` (`serverInfo`, `capabilities`...).
        self.server: dict[str, Any] | None = None

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, heard: Heard | None = None
    ) -> Any:
        """`method`'s result; raises McpRpcError for an error answer, McpHttpError when the
        server cannot be reached or breaks the protocol. `heard` gets the notifications the
        server sends while it answers (progress, log messages)."""
        await self._ensure_session(None)
        generation = self._session
        try:
            return await self._send(method, params, heard)
        except (_SessionGone, httpx.ConnectError):
            # It never ran: the server refused the session, or was not there (restarted?).
            await self._ensure_session(generation, again=True)
            try:
                return await self._send(method, params, heard)
            except _SessionGone:
                raise McpHttpError("the server forgot the session it had just made") from None
            except httpx.HTTPError as exc:
                raise McpHttpError(_describe(exc)) from None
        except httpx.HTTPError as exc:
            # It may have run: not sent again, but the next request starts a new session.
            self._version = None
            raise McpHttpError(_describe(exc)) from None

    async def close(self) -> None:
        """End the session on the server (best effort)."""
        session, self._session, self._version = self._session, None, None
        if session is not None:
            with contextlib.suppress(httpx.HTTPError):
                headers = {**self._headers, SESSION_HEADER: session}
                await self._client.delete(self._url, headers=headers, timeout=2)

    async def _ensure_session(self, seen: str | None, *, again: bool = False) -> None:
        async with self._initialized:
            if self._version is not None and not (again and self._session == seen):
                return
            self._session, self._version = None, None
            try:
                result = await self._send(
                    "initialize",
                    {"protocolVersion": PROTOCOL_VERSIONS[0], "capabilities": {}, "clientInfo": CLIENT_INFO},
                    initializing=True,
                )
            except (httpx.HTTPError, _SessionGone) as exc:
                raise McpHttpError(_describe(exc)) from None
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if version not in PROTOCOL_VERSIONS:
                raise McpHttpError(
                    f"the server speaks protocol {version!r}, not one of {', '.join(PROTOCOL_VERSIONS)}"
                )
            self.server = result
            self._version = version
            try:
                await self._notify("notifications/initialized")
            except httpx.HTTPError as exc:
                self._version = None
                raise McpHttpError(_describe(exc)) from None

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self._session is not None:
            headers[SESSION_HEADER] = self._session
        if self._version is not None and self._version != "2024-11-05":
            headers[VERSION_HEADER] = self._version
        return headers

    async def _notify(self, method: str) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        response = await self._client.post(
            self._url, content=json.dumps(message), headers=self._request_headers()
        )
        await response.aclose()
        if response.status_code >= 400:
            raise McpHttpError(f"{method} answered {response.status_code}")

    async def _send(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        heard: Heard | None = None,
        *,
        initializing: bool = False,
    ) -> Any:
        ident = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        headers = self._request_headers()
        request = self._client.build_request("POST", self._url, content=json.dumps(message), headers=headers)
        response = await self._client.send(request, stream=True)
        try:
            if response.status_code == 404 and SESSION_HEADER in headers:
                raise _SessionGone()
            if response.status_code >= 400:
                body = (await response.aread()).decode(errors="replace").strip()[:300]
                raise McpHttpError(
                    f"{method} answered {response.status_code}" + (f": {body}" if body else "")
                )
            if initializing:
                self._session = response.headers.get(SESSION_HEADER)
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind == "text/event-stream":
                async for answer in self._events(response):
                    if answer.get("id") == ident and ("result" in answer or "error" in answer):
                        return _outcome(answer)
                    if "id" in answer:
                        await self._answer_server(answer)
                    elif heard is not None and isinstance(answer.get("method"), str):
                        heard(answer)
                raise McpHttpError(f"{method}: the event stream ended without an answer")
            try:
                answer = json.loads(await response.aread())
            except ValueError:
                raise McpHttpError(f"{method} answered {kind or 'no content type'}, not JSON-RPC") from None
            if not isinstance(answer, dict):
                raise McpHttpError(f"{method} answered a JSON-RPC batch or a non-object")
            return _outcome(answer)
        finally:
            await response.aclose()

    async def _events(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        data: list[str] = []
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                text, data = "\n".join(data), []
                try:
                    message = json.loads(text)
                except ValueError:
                    log.warning("an MCP server sent an event that is not JSON: %.200s", text)
                    continue
                if isinstance(message, dict):
                    yield message

    async def _answer_server(self, message: dict[str, Any]) -> None:
        """A request of the server's gets an answer."""
        if "method" not in message:
            return
        if message["method"] == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            error = {
                "code": METHOD_NOT_FOUND,
                "message": f"{message['method']} is not available through toolmesh",
            }
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        try:
            response = await self._client.post(
                self._url, content=json.dumps(reply), headers=self._request_headers()
            )
            await response.aclose()
        except httpx.HTTPError as exc:
            log.warning("could not answer an MCP server's %s: %s", message["method"], _describe(exc))


def _outcome(answer: dict[str, Any]) -> Any:
    error = answer.get("error")
    if isinstance(error, dict):
        raise McpRpcError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))
    return answer.get("result")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _SessionGone):
        return "the server forgot the session"
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({type(exc).__name__})"
    return str(exc) or type(exc).__name__
