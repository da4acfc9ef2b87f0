"""JSON-RPC with one MCP server over Streamable HTTP, on one pooled httpx client.

Lean on purpose (no SDK session task group per server): each request is one POST whose answer is
either a JSON body or an event stream ending with the response. Both eras of the protocol: first a
`server/discover` probe; a server that answers it speaks the per-request era (2026-07-28: each
request carries the protocol version and the client's capabilities in `_meta` and in headers, and
there is no session); any other is asked to `initialize` (the handshake era, 2024-11-05 to
2025-11-25), whose session (`Mcp-Session-Id`) is made again when the server forgets it (404) or
cannot be reached. A request that never reached the server is sent again once. The notifications the
server sends while it answers (progress, log messages) go to the request's `heard`. Its
elicitation, sampling and roots requests go to the request's `answer` (the call's caller,
runtimes/mcp/server_asks.py): on the request's event stream; on the session's standalone stream (a
GET the session keeps open in the handshake era) while that request is the only one in flight that
can ask; and, in the per-request era, as its input-required results (input_rounds.py). Others, and
these with no one to answer (a `roots/list` just after `initialize`: roots are each call's
caller's), are declined, as the SDK's client declines them when given no callbacks. Its
`list_changed` notifications, on a request's stream or on the standalone stream, go to `changed`.

Whose a request on the standalone stream is, nothing says: 2025-11-25 has no related-request field
(an SDK's `relatedRequestId` only picks the call's own stream, where no hint is needed), and its
`_meta` `io.modelcontextprotocol/related-task` names a task, which the gateway never starts. So with
several calls in flight that can ask, it is declined rather than guessed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from toolmesh.gateway.sources.remote_mcp.http_wire import (
    McpHttpError,
    McpRpcError,
    event_messages,
    header_value,
    outcome,
)
from toolmesh.gateway.sources.remote_mcp.input_rounds import (
    ASKING_METHODS,
    MAX_ROUNDS,
    asks,
    retry_params,
)
from toolmesh.gateway.sources.remote_mcp.server_requests import list_changed, reply_to
from toolmesh.runtimes.mcp.server_asks import Answerer, answers, capabilities

log = logging.getLogger("toolmesh.sources")

#: The handshake revisions the gateway speaks, newest first (it offers the first).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: The per-request revision it speaks (no handshake, no session).
MODERN_VERSION = "2026-07-28"
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
#: The request parameter each method's `Mcp-Name` header repeats (per-request era).
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: The per-request era's `_meta` keys.
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
CLIENT_INFO = {"name": "toolmesh-gateway", "version": "1"}
#: Seconds before the standalone stream is opened again after it ended or failed.
LISTEN_RETRY = 1.0
#: The standalone stream waits as long as the server is silent.
LISTEN_TIMEOUT = httpx.Timeout(None, connect=10)


#: Receives a notification the server sent while answering a request (its JSON-RPC message).
Heard = Callable[[dict[str, Any]], None]


class _SessionGone(Exception):
    """The server no longer knows the session (404 on a request that named it)."""


class McpHttpSession:
    """Requests to one Streamable HTTP MCP endpoint, its session kept across calls."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        changed: Callable[[str], None] | None = None,
        roots: bool = False,
    ) -> None:
        """`changed` gets the method of each `notifications/*/list_changed` the server sends;
        `roots` offers the server roots (else its `roots/list` is declined)."""
        self._client = client
        self._roots = roots
        self._capabilities = capabilities(roots)
        self._changed = changed
        #: The standalone stream's reader, while a session of the handshake era is open.
        self._listening: asyncio.Task[None] | None = None
        self._url = url
        self._headers = {
            **headers,
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self._ids = itertools.count(1)
        self._session: str | None = None
        #: The revision agreed on; None until then, and after a failure that calls for another.
        self._version: str | None = None
        self._initialized: asyncio.Lock = asyncio.Lock()
        #: The requests in flight that can ask (their id: their `answer` and the task reading their
        #: answer), for asks on the standalone stream; `_ended`, why one of them was stopped.
        self._asking: dict[int, tuple[Answerer, asyncio.Task[Any]]] = {}
        self._ended: dict[int, Exception] = {}
        #: What the server said of itself in `initialize` (`serverInfo`, `capabilities`...).
        self.server: dict[str, Any] | None = None

    @property
    def version(self) -> str | None:
        """The protocol revision agreed on with the server, once it is."""
        return self._version

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        heard: Heard | None = None,
        log_level: str | None = None,
        answer: Answerer | None = None,
    ) -> Any:
        """`method`'s result; raises McpRpcError for an error answer, McpHttpError when the
        server cannot be reached or breaks the protocol. `heard` gets the notifications the
        server sends while it answers (progress, and log messages at `log_level` and above,
        an MCP level name, which a per-request era server sends only when asked); `answer`
        answers its elicitation, sampling and roots requests meanwhile (what it raises, the request
        raises, once the server is told to stop). A per-request era server's input-required
        results are answered by `answer` and the request sent again, round after round (raises
        CannotAnswer when it asks what the gateway does not answer)."""
        result = await self._request_once(method, params, heard, log_level, answer)
        if method not in ASKING_METHODS:
            return result
        for _ in range(MAX_ROUNDS):
            if not asks(result):
                return result
            params = retry_params(params, result, answer)
            result = await self._request_once(method, params, heard, log_level, answer)
        raise McpHttpError(f"{method}: the server still asked for input after {MAX_ROUNDS} rounds")

    async def _request_once(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        heard: Heard | None,
        log_level: str | None,
        answer: Answerer | None,
    ) -> Any:
        await self._ensure_session(None)
        generation = self._session
        try:
            return await self._send(method, self._params(params, log_level), heard, answer=answer)
        except (_SessionGone, httpx.ConnectError):
            # It never ran: the server refused the session, or was not there (restarted?).
            await self._ensure_session(generation, again=True)
            try:
                return await self._send(method, self._params(params, log_level), heard, answer=answer)
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
        self._stop_listening()
        if session is not None:
            with contextlib.suppress(httpx.HTTPError):
                headers = {**self._headers, SESSION_HEADER: session}
                await self._client.delete(self._url, headers=headers, timeout=2)

    async def _ensure_session(self, seen: str | None, *, again: bool = False) -> None:
        async with self._initialized:
            if self._version is not None and not (again and self._session == seen):
                return
            self._session, self._version = None, None
            self._stop_listening()
            if await self._discover():
                return
            try:
                result = await self._send(
                    "initialize",
                    {
                        "protocolVersion": PROTOCOL_VERSIONS[0],
                        "capabilities": self._capabilities,
                        "clientInfo": CLIENT_INFO,
                    },
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
            self._start_listening()

    def _start_listening(self) -> None:
        """Open the standalone stream of the session just made, when someone hears `changed`."""
        if self._changed is not None and self._session is not None:
            self._listening = asyncio.get_running_loop().create_task(self._listen(self._session))

    def _stop_listening(self) -> None:
        listening, self._listening = self._listening, None
        if listening is not None:
            listening.cancel()

    async def _listen(self, session: str) -> None:
        """Read the session's standalone stream (GET) while the session lasts, for what the server
        says outside any request; a server that offers none (405) is not asked again."""
        headers = {key: value for key, value in self._request_headers().items() if key != "content-type"}
        headers["accept"] = "text/event-stream"
        while self._session == session:
            try:
                timeout = httpx.Timeout(None, connect=10)
                async with self._client.stream(
                    "GET", self._url, headers=headers, timeout=timeout
                ) as response:
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if response.status_code != 200 or kind != "text/event-stream":
                        return
                    async for event in event_messages(response):
                        if "id" in event:
                            await self._answer_aside(event)
                        else:
                            self._heard_changed(event)
            except httpx.HTTPError:
                pass
            await asyncio.sleep(LISTEN_RETRY)

    async def _answer_aside(self, message: dict[str, Any]) -> None:
        """A request of the server's on the standalone stream: the call's, when one call that can
        ask is in flight (stopped, when its caller must answer first); else declined."""
        only = next(iter(self._asking.items())) if len(self._asking) == 1 else None
        if only is None or not answers(str(message.get("method")), self._roots):
            await self._answer_server(message, 0, None)
            return
        ident, (answer, reading) = only

        def answering(method: str, params: dict[str, Any]) -> dict[str, Any]:
            try:
                return answer(method, params)
            except Exception as exc:
                # Stopped before the server hears of it: its error answer to the call is not the outcome.
                self._ended[ident] = exc
                reading.cancel()
                raise

        with contextlib.suppress(Exception):
            await self._answer_server(message, ident, answering)

    def _heard_changed(self, event: dict[str, Any]) -> bool:
        """Whether `event` is a `list_changed` notification (then `changed` has it)."""
        method = list_changed(event)
        if method is None:
            return False
        if self._changed is not None:
            self._changed(method)
        return True

    async def _discover(self) -> bool:
        """Whether the server speaks the per-request era (then it is agreed on)."""
        self._version = MODERN_VERSION
        try:
            result = await self._send("server/discover", self._params(None, None))
        except (McpRpcError, McpHttpError, _SessionGone):
            # A server of the handshake era: it refuses the method, or a request with no session.
            self._version = None
            return False
        except httpx.HTTPError as exc:
            self._version = None
            raise McpHttpError(_describe(exc)) from None
        supported = result.get("supportedVersions") if isinstance(result, dict) else None
        if not isinstance(supported, list) or MODERN_VERSION not in supported:
            self._version = None
            return False
        self.server = result
        return True

    def _params(self, params: Mapping[str, Any] | None, log_level: str | None) -> Mapping[str, Any] | None:
        """`params` with the per-request era's envelope in `_meta`, in that era."""
        if self._version != MODERN_VERSION:
            return params
        meta = {
            **(params or {}).get("_meta", {}),
            VERSION_KEY: MODERN_VERSION,
            CLIENT_INFO_KEY: CLIENT_INFO,
            CAPABILITIES_KEY: self._capabilities,
        }
        if log_level is not None:
            meta[LOG_LEVEL_KEY] = log_level
        return {**(params or {}), "_meta": meta}

    def _request_headers(
        self, method: str | None = None, params: Mapping[str, Any] | None = None
    ) -> dict[str, str]:
        headers = dict(self._headers)
        if self._session is not None:
            headers[SESSION_HEADER] = self._session
        if self._version is not None and self._version != "2024-11-05":
            headers[VERSION_HEADER] = self._version
        if self._version == MODERN_VERSION and method is not None:
            headers[METHOD_HEADER] = method
            named = (params or {}).get(NAMED.get(method, ""))
            if isinstance(named, str):
                headers[NAME_HEADER] = header_value(named)
        return headers

    async def _notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
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
        answer: Answerer | None = None,
    ) -> Any:
        ident = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        headers = self._request_headers(method, params)
        request = self._client.build_request("POST", self._url, content=json.dumps(message), headers=headers)
        exchange = self._exchange(request, method, ident, heard, initializing, answer)
        return await (exchange if answer is None else self._asking_during(ident, answer, exchange))

    async def _exchange(
        self,
        request: httpx.Request,
        method: str,
        ident: int,
        heard: Heard | None,
        initializing: bool,
        answer: Answerer | None,
    ) -> Any:
        response = await self._client.send(request, stream=True)
        try:
            if response.status_code == 404 and SESSION_HEADER in request.headers:
                raise _SessionGone()
            if response.status_code >= 400:
                body = (await response.aread()).decode(errors="replace").strip()[:300]
                raise McpHttpError(
                    f"{method} answered {response.status_code}" + (f": {body}" if body else ""),
                    response.status_code,
                )
            if initializing:
                self._session = response.headers.get(SESSION_HEADER)
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind == "text/event-stream":
                return await self._read_stream(response, method, ident, heard, answer)
            try:
                answered = json.loads(await response.aread())
            except ValueError:
                raise McpHttpError(f"{method} answered {kind or 'no content type'}, not JSON-RPC") from None
            if not isinstance(answered, dict):
                raise McpHttpError(f"{method} answered a JSON-RPC batch or a non-object")
            return outcome(answered)
        finally:
            await response.aclose()

    async def _read_stream(
        self, response: httpx.Response, method: str, ident: int, heard: Heard | None, answer: Answerer | None
    ) -> Any:
        """The answer on `response`'s event stream, hearing and answering what comes before it."""
        async for event in event_messages(response):
            if event.get("id") == ident and ("result" in event or "error" in event):
                return outcome(event)
            if "id" in event:
                await self._answer_server(event, ident, answer)
            elif (
                not self._heard_changed(event) and heard is not None and isinstance(event.get("method"), str)
            ):
                heard(event)
        raise McpHttpError(f"{method}: the event stream ended without an answer")

    async def _asking_during(self, ident: int, answer: Answerer, exchange: Awaitable[Any]) -> Any:
        """`exchange`'s outcome, for a request that may be asked on the standalone stream too: what
        its `answer` raises there stops the exchange and is raised here."""
        task = asyncio.current_task()
        assert task is not None
        self._asking[ident] = (answer, task)
        try:
            return await exchange
        except asyncio.CancelledError:
            ended = self._ended.pop(ident, None)
            if ended is None:
                raise
            task.uncancel()
            raise ended from None
        finally:
            del self._asking[ident]
            self._ended.pop(ident, None)

    async def _answer_server(self, message: dict[str, Any], during: int, answer: Answerer | None) -> None:
        """A request of the server's (sent during request `during`) gets an answer. When `answer`
        raises, the server's request gets an error, `during` is cancelled, and this raises it."""
        method = message.get("method")
        if not isinstance(method, str):
            return
        reply, ended = reply_to(message, answer, self._roots)
        await self._reply(reply, method)
        if ended is not None:
            with contextlib.suppress(httpx.HTTPError, McpHttpError):
                await self._notify("notifications/cancelled", {"requestId": during})
            raise ended

    async def _reply(self, reply: dict[str, Any], method: str) -> None:
        try:
            response = await self._client.post(
                self._url, content=json.dumps(reply), headers=self._request_headers()
            )
            await response.aclose()
        except httpx.HTTPError as exc:
            log.warning("could not answer an MCP server's %s: %s", method, _describe(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _SessionGone):
        return "the server forgot the session"
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({type(exc).__name__})"
    return str(exc) or type(exc).__name__
