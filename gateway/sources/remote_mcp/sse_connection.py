"""One open HTTP+SSE connection to an MCP server: the event stream (a GET held open) whose first
event says where to POST, and the requests waiting for their answers on it.

Every answer, notification and request of the server's comes on that one stream; answers are
matched to their requests by JSON-RPC id, the rest goes to `dispatch`. A POST only says the message
was accepted (202). When the stream ends or fails (the server restarted), every request waiting on
it fails with StreamLost, and the connection is not used again.

A stream can also die without ending (a server that hangs, a network that drops packets): whenever
it has been silent for `heartbeat` seconds (no message, no comment: the Python SDK's server sends a
comment every 15 s), the gateway pings the server (MCP `ping`, its answer on the stream), and the
stream is lost when no answer comes within `ping_timeout`. So a dead stream is found within
`heartbeat + ping_timeout` seconds, busy or idle, and a server with no heartbeat of its own is
pinged once a `heartbeat` while it is silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any

import httpx

from toolmesh.gateway.sources.remote_mcp.http_wire import McpHttpError, McpRpcError, outcome
from toolmesh.gateway.sources.remote_mcp.sse_wire import EventReader, endpoint_url

log = logging.getLogger("toolmesh.sources")

#: Seconds the stream may be silent before the server is pinged.
HEARTBEAT = 30.0
#: Seconds the server has to answer that ping before its stream is taken for dead.
PING_TIMEOUT = 10.0
#: Seconds to open the stream's connection (then it waits as long as the heartbeat lets it).
CONNECT_TIMEOUT = 10.0
#: HTTP statuses of a POST that say the server no longer knows the connection's session: the
#: message never reached an MCP session (a restarted server), so it may be sent again elsewhere.
SESSION_GONE = frozenset({404, 410})


class StreamLost(Exception):
    """The connection's stream ended or died; its message says how."""


class NotDelivered(Exception):
    """A message never reached the server's session (it was not there, or has forgotten it)."""


#: Receives what the server sent that is not an answer: a notification or a request of its own.
Dispatch = Callable[["SseConnection", dict[str, Any]], None]


class SseConnection:
    """An event stream and its endpoint, open until `close` or until the stream is lost."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        ids: Iterator[int],
        dispatch: Dispatch,
        *,
        heartbeat: float = HEARTBEAT,
        ping_timeout: float = PING_TIMEOUT,
    ) -> None:
        self._client = client
        self._url = url
        self._headers = dict(headers)
        self._ids = ids
        self._dispatch = dispatch
        self._heartbeat = heartbeat
        self._ping_timeout = ping_timeout
        #: Where to POST, once the `endpoint` event said it.
        self.endpoint: str | None = None
        #: Why the stream is over; None while it lasts.
        self.lost: str | None = None
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._events: EventReader | None = None
        self._reader: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._errands: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        """GET the stream and wait for its `endpoint` event; raises McpHttpError (its `status`, the
        GET's, when the server answered) or StreamLost."""
        headers = {**self._headers, "accept": "text/event-stream"}
        timeout = httpx.Timeout(None, connect=CONNECT_TIMEOUT)
        request = self._client.build_request("GET", self._url, headers=headers, timeout=timeout)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise McpHttpError(f"GET for an event stream: {describe(exc)}") from None
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code != 200 or kind != "text/event-stream":
            said = f"{response.status_code}" if response.status_code != 200 else kind or "no content type"
            body = (await response.aread()).decode(errors="replace").strip()[:300]
            await response.aclose()
            raise McpHttpError(
                f"GET for an event stream answered {said}" + (f": {body}" if body else ""),
                response.status_code,
            )
        self._events = EventReader(response)
        self._reader = asyncio.get_running_loop().create_task(self._read(response, self._events))
        self.endpoint = await self._opened
        self._watchdog = asyncio.get_running_loop().create_task(self._watch())

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, ident: int | None = None
    ) -> Any:
        """`method`'s result (its answer on the stream); raises McpRpcError, McpHttpError (the POST
        failed), NotDelivered or StreamLost. A caller that stops waiting (cancelled, timed out)
        cancels the request on the server (`notifications/cancelled`), `initialize` excepted."""
        ident = next(self._ids) if ident is None else ident
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        if self.lost is not None:
            raise NotDelivered(self.lost)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answer
        try:
            await self.post(message)
            return outcome(await answer)
        except asyncio.CancelledError:
            if method != "initialize" and self.lost is None:
                cancelled = {"requestId": ident, "reason": "the gateway's caller gave up"}
                self.spawn(self.notify("notifications/cancelled", cancelled))
            raise
        finally:
            self._waiting.pop(ident, None)
            if answer.done() and not answer.cancelled():
                answer.exception()  # seen: when the POST failed first, its error is the outcome

    def fail(self, ident: int, exc: BaseException) -> None:
        """End request `ident` with `exc` (its caller stopped it to ask: server_requests.py)."""
        answer = self._waiting.get(ident)
        if answer is not None and not answer.done():
            answer.set_exception(exc)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification, best effort (logged when it cannot be)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.post(message)
        except NotDelivered:
            pass  # the stream is over: nothing waits for the notice
        except McpHttpError as exc:
            log.warning("could not send an MCP server %s: %s", method, exc)

    async def post(self, message: Mapping[str, Any]) -> None:
        """POST one message to the endpoint; raises NotDelivered or McpHttpError."""
        if self.endpoint is None or self.lost is not None:
            raise NotDelivered(self.lost or "the event stream has no endpoint yet")
        what = message.get("method") or "an answer"
        headers = {**self._headers, "content-type": "application/json"}
        try:
            response = await self._client.post(self.endpoint, content=json.dumps(message), headers=headers)
        except httpx.ConnectError as exc:
            raise NotDelivered(describe(exc)) from None
        except httpx.HTTPError as exc:
            raise McpHttpError(f"{what}: {describe(exc)}") from None
        if response.status_code in SESSION_GONE:
            raise NotDelivered(f"the server forgot the session ({what} answered {response.status_code})")
        if response.status_code >= 400:
            body = response.text.strip()[:300]
            raise McpHttpError(
                f"{what} answered {response.status_code}" + (f": {body}" if body else ""),
                response.status_code,
            )

    def spawn(self, errand: Coroutine[Any, Any, None]) -> None:
        """Run `errand` (a reply, a notice) beside the reader, which never waits for a POST."""
        task = asyncio.get_running_loop().create_task(errand)
        self._errands.add(task)
        task.add_done_callback(self._errands.discard)

    async def close(self) -> None:
        self._lose("the connection was closed")
        for task in (self._reader, self._watchdog, *self._errands):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _read(self, response: httpx.Response, reader: EventReader) -> None:
        reason = "the server ended its event stream"
        try:
            async for name, data in reader.events():
                if name == "endpoint":
                    if not self._opened.done():
                        self._opened.set_result(endpoint_url(self._url, data))
                    continue
                try:
                    message = json.loads(data)
                except ValueError:
                    log.warning("an MCP server sent an event that is not JSON: %.200s", data)
                    continue
                if isinstance(message, dict):
                    self._received(message)
        except httpx.HTTPError as exc:
            reason = f"its event stream failed: {describe(exc)}"
        except McpHttpError as exc:
            reason = str(exc)
            if not self._opened.done():
                self._opened.set_exception(exc)
        finally:
            self._lose(reason)
            await response.aclose()

    def _received(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        if isinstance(ident, str) and ident.isdigit():
            ident = int(ident)  # a server that echoes ids as strings
        if "method" not in message and ("result" in message or "error" in message):
            answer = self._waiting.get(ident) if isinstance(ident, int) else None
            if answer is not None and not answer.done():
                answer.set_result(message)
            return
        try:
            self._dispatch(self, message)
        except Exception:
            log.exception("an MCP server's message could not be handled: %.200s", message)

    async def _watch(self) -> None:
        """Ping the server whenever its stream has been silent for a heartbeat; lose the stream
        when it does not answer in time."""
        while self.lost is None:
            heard_at = self._events.heard_at if self._events is not None else time.monotonic()
            quiet = time.monotonic() - heard_at
            if quiet < self._heartbeat:
                await asyncio.sleep(self._heartbeat - quiet)
                continue
            try:
                async with asyncio.timeout(self._ping_timeout):
                    await self.call("ping")
            except McpRpcError:
                pass  # an error answer is an answer: the server is there
            except TimeoutError:
                self._lose(f"the server did not answer a ping within {self._ping_timeout:g} s")
            except (McpHttpError, NotDelivered) as exc:
                self._lose(f"a ping failed: {exc}")
            except StreamLost:
                return

    def _lose(self, reason: str) -> None:
        """The stream is over: every request waiting on it fails, and the reader stops."""
        if self.lost is not None:
            return
        self.lost = reason
        if not self._opened.done():
            self._opened.set_exception(StreamLost(reason))
            self._opened.exception()  # seen: open() is not waiting when its GET failed
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(StreamLost(reason))
        current = asyncio.current_task()
        for task in (self._reader, self._watchdog):
            if task is not None and task is not current:
                task.cancel()


def describe(exc: BaseException) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({type(exc).__name__})"
    return str(exc) or type(exc).__name__
