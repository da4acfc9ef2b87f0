"""The MCP endpoint: `/mcp` and `/mcp/{namespace}` over Streamable HTTP, on the official SDK.

A thin adapter: the SDK's low-level `Server` speaks the protocol, `Mesh` lists
and calls, `mcp_tools` converts. In front of the SDK, `McpEndpoint` checks the
API key (the same keys and scopes as the HTTP API: a key lists and calls only
its functions) and notes the namespace of the path; `Host` and `Origin` are
checked for every HTTP surface by `gateway/http/guards/browser_guard.py`.

Stateless: each request stands alone (no `Mcp-Session-Id`, cursors name a
tool), so any gateway replica can answer any request. Both protocol eras work:
clients of the initialize handshake (2025 revisions) and of the per-request
envelope (2026-07-28).

The common tools/call (no progress token, log level, task or requestState) is answered by
direct_calls.py without the SDK's per-request machinery, with the bytes the SDK would send; a call
that turns out to need the response stream (it logs, in the handshake era, or asks its caller) is
handed to the SDK while it runs and finished by `_call_tool`. tools/list, resources/list,
resources/read, prompts/list and prompts/get are answered the same way by direct_reads.py (the
handlers below, the server's middleware, the SDK's serializer), listings from a cache that a
catalog change clears.

Logs and progress: during a tools/call, what the function logs with `ctx.logger` is sent as
`notifications/message` (at or above the call's level: see notifications.py for how the level
is found in each era) and its `ctx.report_progress` reports as `notifications/progress` when the
client sent a progress token, all on the call's response stream, before the result.
`logging/setLevel` is served and the `logging` capability advertised.

Tasks (tasks.py): with `[jobs]` on, a tools/call of a function declared with `task_support` can
be answered with a task the client polls, which is a toolmesh job; both eras' forms are served.

Asking the caller (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`): on 2026-07-28 a call that asks
answers with an input-required result and a sealed `requestState` (input_requests.py); in the
handshake era its asks go to the client as requests on the call's stream (client_requests.py).

Generators: a tools/call that carries `_meta.progressToken` streams the function's items
from its pod and sends each as `notifications/progress` (progress = items so far, message =
the item in short) on the call's response stream; the result holds every item, as without a
token. Without a token the call runs like any other.

Tool-search mode (tool_search.py): a client that connects to `/mcp?tools=search` lists two
meta-tools, `search_tools` and `call_tool`, instead of the whole catalog.

Resources, prompts and completion are served by resources.py, prompts.py and completion.py
over functions marked `@toolmesh.resource`, `@toolmesh.prompt` and `@toolmesh.completion`;
list results carry the 2026 caching hints (cache_hints.py). A function's
`ctx.resource_updated(uri)` reaches `Mesh.resource_updated`, which this endpoint hands to the
feed (every replica, with Redis) and the feed back to the listen streams subscribed to that URI
as `notifications/resources/updated`.

`notifications/tools/list_changed`: a stateless server has no session to push
to, so the notification travels where the protocol allows it without one. On
2026-07-28 a client opens a `subscriptions/listen` request, whose response is a
stream of change events; whenever the catalog changes, every open stream on
this replica gets `notifications/tools/list_changed` (each replica watches its
own catalog, which every replica loads from the same runtimes). With `[state]` (Redis) a change
is fanned out: the replica whose catalog changed publishes it, and the open streams of every
replica hear it, once (gateway/state/redis_feed.py). The handshake
era would need a session's standalone GET stream, so there the server
advertises ``listChanged: false`` and clients re-list when they need to, and a
GET gets 405 (which the protocol allows) rather than a stream that would stay
empty. On shutdown the listen streams end at once, cleanly (`close_streams`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import json
import logging
import warnings
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from starlette.datastructures import Headers
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from toolmesh._version import __version__
from toolmesh.config import McpConfig
from toolmesh.error_shapes import http_error
from toolmesh.errors import FunctionNotFound, ResourceExhausted, ToolmeshError
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest
from toolmesh.gateway.core.surfaces import Surface
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.mcp import tool_search
from toolmesh.gateway.mcp.cache_hints import LIST_TTL_MS, cache_scope
from toolmesh.gateway.mcp.caller import NAMESPACE, PRINCIPAL, caller, in_namespace, paged, refusal
from toolmesh.gateway.mcp.client_requests import ClientRequests
from toolmesh.gateway.mcp.completion import Completions
from toolmesh.gateway.mcp.convert import call_result, progress_message, tool
from toolmesh.gateway.mcp.direct_calls import ADOPTED, Adopted, DirectCalls
from toolmesh.gateway.mcp.direct_reads import DirectReads
from toolmesh.gateway.mcp.input_requests import Round, input_required, read_round, state_boundary
from toolmesh.gateway.mcp.notifications import (
    DEFAULT_LEVEL,
    CallNotifier,
    SessionLevels,
    python_level,
    requested_level,
)
from toolmesh.gateway.mcp.prompts import Prompts
from toolmesh.gateway.mcp.resources import Resources
from toolmesh.gateway.mcp.tasks import McpTasks, TasksServer
from toolmesh.gateway.state.feed import ChangeFeed, LocalFeed
from toolmesh.protocol.defaults import WIRE_LIMIT_BYTES
from toolmesh.runtimes.functions.asking import Ask, pending_asks
from toolmesh.runtimes.functions.results import Content, ErrorInfo, Result, content_bytes

log = logging.getLogger("toolmesh.gateway")

SERVER_NAME = "toolmesh"
#: Most bytes of items a streamed call may gather for its result: what the largest result a pod
#: can send holds (a generator's items are limited one by one on the way, not in total).
MAX_STREAMED_BYTES = WIRE_LIMIT_BYTES
#: The caller of the request being handled, for SDK callbacks that are given no request.
_CALLER: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("mcp_caller", default=None)


class McpEndpoint:
    """The SDK server over `mesh`, its stateless session manager, and the ASGI app in front."""

    def __init__(
        self,
        mesh: Mesh,
        config: McpConfig,
        feed: ChangeFeed | None = None,
        state_secret: str | None = None,
        jobs: JobService | None = None,
    ) -> None:
        self.mesh = mesh
        self.config = config
        #: Where catalog changes go and come from: this process, or every replica (Redis).
        self._feed = feed or LocalFeed()
        self._bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self._bus)
        self._session_levels = SessionLevels()
        resources = Resources(mesh, config.page_size)
        prompts = Prompts(mesh, config.page_size, config.max_input_rounds)
        self._client_requests = ClientRequests(mesh.config.max_body_bytes)
        with warnings.catch_warnings():
            # Logging is deprecated from 2026-07-28 on (SEP-2577), and still what 2025 clients speak.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server = TasksServer(
                SERVER_NAME,
                version=__version__,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_set_logging_level=self._set_level,
                on_subscriptions_listen=self._listen,
                on_list_resources=resources.list_resources,
                on_list_resource_templates=resources.list_templates,
                on_read_resource=resources.read,
                on_subscribe_resource=resources.subscribe,
                on_unsubscribe_resource=resources.unsubscribe,
                on_list_prompts=prompts.list_prompts,
                on_get_prompt=prompts.get,
                on_completion=Completions(mesh).complete,
                get_tool_input_schema=self._input_schema,
            )
        # Outside what follows: an unwrapped call_tool is, for them, the call of its tool.
        self.server.middleware.append(tool_search.CallToolUnwrap(mesh))
        # Seals the requestState of calls that ask their caller (input_requests.py).
        self.server.middleware.append(
            state_boundary(state_secret, config.state_ttl, SERVER_NAME, self._principal_name)
        )
        if jobs is not None:  # tasks are jobs: without `[jobs]`, every call runs directly
            McpTasks(jobs).install(self.server)
        self._manager = StreamableHTTPSessionManager(
            self.server,
            stateless=True,
            max_request_body_size=mesh.config.max_body_bytes,
        )
        self._reads = DirectReads(self.server)
        self._direct = DirectCalls(
            mesh,
            self.server,
            self._level_of,
            mesh.config.max_body_bytes,
            self._reads,
        )
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._publishing: set[asyncio.Task[None]] = set()
        self._unsubscribe = mesh.catalog.subscribe(self._catalog_changed)
        self._unannounce = mesh.on_resource_updated(self._feed.publish_update)
        self._unlisten: Callable[[], None] | None = None
        self._unlisten_updates: Callable[[], None] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Run the session manager, whose task group serves every request, until `stop`."""
        self._unlisten = self._feed.listen(self._notify_streams)
        self._unlisten_updates = self._feed.listen_updates(self._notify_updated)
        started = asyncio.Event()

        async def run() -> None:
            async with self._manager.run():
                started.set()
                await self._stop.wait()

        self._task = asyncio.create_task(run(), name="mcp-session-manager")
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({self._task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not started.is_set():
            waiting.cancel()
            await self._task  # raises what stopped it

    def close_streams(self) -> None:
        """End open `subscriptions/listen` streams gracefully, so the HTTP server can shut down."""
        self._listen.close()

    async def stop(self) -> None:
        self._unsubscribe()
        self._unannounce()
        for unlisten in (self._unlisten, self._unlisten_updates):
            if unlisten is not None:
                unlisten()
        self.close_streams()
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def routes(self) -> list[BaseRoute]:
        """`/mcp` (every visible function) and `/mcp/{namespace}` (one namespace's)."""
        return [Route("/mcp", self), Route("/mcp/{namespace}", self)]

    # -- the ASGI app in front of the SDK ---------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET":
            # The handshake era's standalone stream: stateless, nothing is ever sent on it, yet it
            # would hold a connection (past the header timeout, so never evicted) and graceful
            # shutdown for as long as the client likes. The protocol lets a server answer 405.
            await self._refuse_get(send)
            return
        headers = Headers(scope=scope)
        try:
            principal = self.mesh.authenticate(headers.get("authorization"))
            namespace = str(scope.get("path_params", {}).get("namespace", ""))
            if namespace and not any(ns.name == namespace for ns in self.mesh.namespaces(principal)):
                raise FunctionNotFound(f"no namespace {namespace!r} with functions this key may call")
            searching = tool_search.search_mode(scope)
        except ToolmeshError as exc:
            await self._refuse(exc, send)
            return
        # RFC 9110 §5.5: a field's value excludes surrounding whitespace, which httptools keeps;
        # the SDK compares Mcp-Name/Mcp-Method/Mcp-Param-* values with the body as they are.
        scope["headers"] = [
            (name, value.strip(b" \t")) if name.startswith(b"mcp-") else (name, value)
            for name, value in scope["headers"]
        ]
        state = scope.setdefault("state", {})
        state[PRINCIPAL] = principal
        state[NAMESPACE] = namespace
        state[tool_search.SEARCHING] = searching
        forwarded = await self._client_requests.intercept(principal.name, receive, send)
        if forwarded is None:  # a client's answer to a request of the server's
            return
        await self._direct.serve(scope, forwarded, send, principal, namespace, self._sdk)

    async def _sdk(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _CALLER.set(scope["state"][PRINCIPAL])
        try:
            await self._manager.handle_request(scope, receive, send)
        finally:
            _CALLER.reset(token)

    def _level_of(self, principal: Principal, session: str) -> int:
        # A handshake-era call's level when its `_meta` names none (`requested_level`).
        remembered = self._session_levels.get(principal.name, session) if session else None
        return python_level(remembered or DEFAULT_LEVEL)

    async def _refuse_get(self, send: Send) -> None:
        body = b"this MCP endpoint is stateless: it has no stream to GET; POST requests to it"
        headers = [(b"allow", b"POST"), (b"content-type", b"text/plain; charset=utf-8")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 405, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _refuse(self, error: ToolmeshError, send: Send) -> None:
        # Refused before the JSON-RPC request was read: an HTTP status with a JSON-RPC error body.
        rendered = http_error(error, jsonrpc=True)
        headers = [(key.encode(), value.encode()) for key, value in rendered.headers.items()]
        await send({"type": "http.response.start", "status": rendered.status, "headers": headers})
        await send({"type": "http.response.body", "body": rendered.body})

    # -- protocol handlers ----------------------------------------------------------------

    @staticmethod
    def _principal_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
        # What a sealed requestState is bound to: a state minted for one key is refused to another.
        principal = ctx.request.scope["state"].get(PRINCIPAL) if ctx.request is not None else None
        return principal.name if isinstance(principal, Principal) else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        principal, namespace = caller(ctx)
        try:
            query = tool_search.list_query(ctx.params)
            if query is not None:  # the draft SEP-1821 query: the best page, no cursor
                found, _ = await tool_search.search(
                    self.mesh, principal, namespace, query, self.config.page_size
                )
                return self._tools_page([tool(spec) for spec in found], None)
        except ToolmeshError as exc:
            raise refusal(exc) from None
        if ctx.request is not None and tool_search.searching(ctx.request.scope):
            return self._tools_page(tool_search.meta_tools(self.mesh), None)
        specs = in_namespace(self.mesh.functions(principal), namespace)
        chunk, cursor = paged(specs, params, self.config.page_size)
        return self._tools_page([tool(spec) for spec in chunk], cursor)

    def _tools_page(self, tools: list[types.Tool], cursor: str | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=tools,
            next_cursor=cursor,
            ttl_ms=LIST_TTL_MS,
            cache_scope=cache_scope(self.mesh.auth.open),
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        principal, namespace = caller(ctx)
        meta = tool_search.meta_call(ctx, params.name)
        if meta and params.name == tool_search.SEARCH_TOOLS:
            return await tool_search.answer_search(self.mesh, principal, namespace, params.arguments)
        if meta:  # call_tool that CallToolUnwrap left: bad arguments, or a name not found
            target = tool_search.call_arguments(params.arguments)
            if isinstance(target, types.CallToolResult):
                return target
            params = types.CallToolRequestParams(name=target[0], arguments=target[1])
        try:
            spec = self.mesh.function(params.name, principal)
            if namespace and spec.namespace != namespace:
                raise FunctionNotFound(f"no function {params.name!r} in namespace {namespace!r}")
        except FunctionNotFound as exc:
            if meta:
                return tool_search.not_found(exc)
            raise refusal(exc) from None
        except ToolmeshError as exc:
            raise refusal(exc) from None
        headers = ctx.request.headers if ctx.request is not None else {}
        arguments = json.dumps(params.arguments or {}).encode()
        asked = read_round(ctx)
        options = CallOptions.from_headers(headers)
        # A keyed call's outcome is stored whole (gateway/idempotency/): it is not streamed.
        streams = (
            spec.streaming
            and not options.idempotency_key
            and progress_token_from_params(ctx.params) is not None
        )
        notifier = self._notifier(ctx, principal, options.session_id, streams)
        events = notifier.listener if notifier is not None else None
        call = InvokeRequest(spec.qualified_name, arguments, asked.apply(options), events)
        adopted = ctx.request.scope["state"].pop(ADOPTED, None) if ctx.request is not None else None
        if isinstance(adopted, Adopted):  # started by the fast path (direct_calls.py), finished here
            for event in adopted.events:
                if events is not None:
                    events.deliver(event)
            adopted.sink = events.deliver if events is not None else None
        try:
            while True:  # once, or once per round of asks in the handshake era (client_requests.py)
                if isinstance(adopted, Adopted):
                    result, adopted = await adopted.outcome, None
                elif streams:
                    result = await self._stream(ctx, principal, call)
                else:
                    result = await self.mesh.invoke(principal, call, Surface.MCP)
                if (pending := pending_asks(result)) is None:
                    break
                answered = await self._answer(ctx, asked, *pending)
                if not isinstance(answered, Round):
                    break
                asked = answered
                call = dataclasses.replace(call, options=asked.apply(options))
            if notifier is not None:
                await notifier.finish()
        except ToolmeshError as exc:
            raise refusal(exc) from None
        finally:
            if notifier is not None:
                notifier.cancel()
        if pending is not None and not isinstance(answered, Round):
            if isinstance(answered, types.InputRequiredResult):
                return answered
            result = answered
        return call_result(spec, result)

    async def _answer(
        self, ctx: ServerRequestContext[Any, Any], asked: Round, asks: list[Ask], unable: list[str]
    ) -> Round | types.InputRequiredResult | Result:
        """What follows a run that asked: the next round (its answers got from the client on the
        call's stream, 2025 era), an input-required result (2026-07-28), or an error result."""
        rounds = self.config.max_input_rounds
        if asked.modern:
            return input_required(asked, asks, unable, rounds)
        principal, _ = caller(ctx)
        return await self._client_requests.next_round(ctx, principal.name, asked, asks, rounds)

    def _notifier(
        self, ctx: ServerRequestContext[Any, Any], principal: Principal, session: str, streams: bool
    ) -> CallNotifier | None:
        """Where the call's log records and progress reports go, or None when the client wants
        neither. A generator's progress is its items (`_stream`), not its reports."""
        remembered = self._session_levels.get(principal.name, session) if session else None
        level = requested_level(ctx, remembered)
        progress = not streams and progress_token_from_params(ctx.params) is not None
        if level is None and not progress:
            return None
        return CallNotifier(ctx, 0 if level is None else python_level(level), progress)

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        # Stateless: the level holds for later calls only under the same X-Session-Id (and key).
        principal, _ = caller(ctx)
        headers = ctx.request.headers if ctx.request is not None else {}
        try:
            session = CallOptions.from_headers(headers).session_id
        except ToolmeshError as exc:
            raise refusal(exc) from None
        if session:
            self._session_levels.set(principal.name, session, params.level)
        return types.EmptyResult()

    async def _stream(
        self, ctx: ServerRequestContext[Any, Any], principal: Principal, call: InvokeRequest
    ) -> Result:
        """The call's result with every item, each reported as progress when it arrives."""
        items: list[Content] = []
        size = 0
        async with contextlib.aclosing(self.mesh.stream(principal, call, Surface.MCP)) as events:
            async for event in events:
                if isinstance(event, Result):
                    event.content = items + event.content
                    return event
                for item in event:
                    size += content_bytes([item])
                    if size > MAX_STREAMED_BYTES:
                        error = ResourceExhausted(f"the items passed {MAX_STREAMED_BYTES} bytes in all")
                        return Result.failure(ErrorInfo.from_exception(error))
                    items.append(item)
                    await ctx.session.report_progress(len(items), None, progress_message(item))
        raise AssertionError("a stream ends with its result")

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        # Used by the SDK to check Mcp-Param-* headers. None when unknown or out of the caller's
        # scopes alike, so that how a header is checked says nothing about other keys' tools.
        principal = _CALLER.get()
        if principal is None:
            return None
        try:
            return self.mesh.function(name, principal).input_schema
        except ToolmeshError:
            return None

    # -- list_changed -----------------------------------------------------------------------

    def _catalog_changed(self) -> None:
        # To the feed, not straight to the streams: the feed brings it back to this replica's
        # streams (and, shared, to every other replica's), so each stream hears it once.
        self._reads.invalidate()
        self._later(self._feed.publish())

    def _notify_streams(self) -> None:
        # A catalog change may change any of the three lists; each stream hears only what it asked for.
        self._reads.invalidate()
        for event in (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()):
            self._later(self._bus.publish(event))

    def _notify_updated(self, uri: str) -> None:
        # Only listen streams that subscribed to `uri` hear it (the SDK's ListenHandler filters).
        self._later(self._bus.publish(ResourceUpdated(uri=uri)))

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)
