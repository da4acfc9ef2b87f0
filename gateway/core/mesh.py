"""The gateway's core: everything a front door can ask of the mesh, for a principal.

    list: functions, function, namespaces, system_message, tools
    call: invoke, stream, execute_batch
    free text: route, execute, confirm, route_feedback
    operations: reload, recent_invocations

HTTP routes, the gRPC Mesh service, MCP and the OpenAI adapters parse their wire form into
the typed requests of `requests.py`, call one of these, and render what comes back; which
failures each of them refuses and which become error results is `surfaces.REFUSALS`. Nothing
here knows a transport.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import toolmesh.tracing as tracing
from toolmesh.config import GatewayConfig, RouterConfig
from toolmesh.errors import FunctionNotFound, InvalidRequest, NotFromFreeText, ToolmeshError
from toolmesh.gateway.core import free_text
from toolmesh.gateway.core.auth import ADMIN, LEARN, Authenticator, Principal
from toolmesh.gateway.core.backend import RuntimePool
from toolmesh.gateway.core.catalog import Catalog, Namespace
from toolmesh.gateway.core.drain import Drain
from toolmesh.gateway.core.free_text import carried_arguments, verdict
from toolmesh.gateway.core.keyed_calls import KeyedCalls
from toolmesh.gateway.core.metrics import GatewayMetrics
from toolmesh.gateway.core.recent_invocations import InvocationRecord, RecentInvocations
from toolmesh.gateway.core.reloading import Reloader, ReloadReport
from toolmesh.gateway.core.requests import (
    CallOptions,
    ConfirmRequest,
    ExecuteRequest,
    InvokeRequest,
    RouteRequest,
    ToolsRequest,
)
from toolmesh.gateway.core.result_json import result_json
from toolmesh.gateway.core.surfaces import REFUSALS, Surface
from toolmesh.gateway.core.tool_formats import tool_definition
from toolmesh.gateway.idempotency.local_outcomes import LocalOutcomes
from toolmesh.gateway.identity.audit import AuditTrail
from toolmesh.gateway.state.confirmations import Confirmations, LocalConfirmations, PendingCall
from toolmesh.protocol.calls import Call, new_request_id
from toolmesh.router.execution import Execution, FunctionCaller
from toolmesh.router.routing import RouteResult
from toolmesh.router.service import RouterService
from toolmesh.runtimes.functions.features import match_uri
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import RESOURCE, FunctionSpec

#: What a refusal of a free-text call says of the call it planned.
PLANNED_CALL = ("function", "arguments", "argument_sources", "candidates", "routing_id")


class Mesh:
    def __init__(
        self,
        catalog: Catalog,
        pool: RuntimePool,
        auth: Authenticator,
        config: GatewayConfig,
        metrics: GatewayMetrics | None = None,
        router: RouterService | None = None,
        confirmations: Confirmations | None = None,
        keyed: KeyedCalls | None = None,
    ) -> None:
        self.catalog = catalog
        self.pool = pool
        self.auth = auth
        self.config = config
        self.metrics = metrics or GatewayMetrics()
        #: Free-text routing; without one, route/execute/tools?query answer 503.
        self.router = router or RouterService(RouterConfig(enabled=False))
        #: Free-text calls waiting for their confirmation (in Redis where `[state]` says).
        self.confirmations = confirmations or LocalConfirmations()
        #: Calls with an `Idempotency-Key` and their outcomes (shared with replicas where `[state]` says).
        self.keyed = keyed or KeyedCalls(LocalOutcomes(), config.idempotency_ttl, config.idempotency_lease)
        #: The calls in flight, for a graceful stop (server.py).
        self.drain = Drain()
        #: Hot reload of the runtimes (`reload`, SIGHUP, `toolmesh up --reload`).
        self.reloader = Reloader(catalog, pool, self.router)
        pool.on_listing_changed(self.reloader.follow)
        #: The last calls, for the console's live view (`recent_invocations`).
        self.recent = RecentInvocations()
        #: One record per call (who, what, outcome), when `[gateway] audit_log` is on.
        self.audit = AuditTrail(config.audit_file) if config.audit_log else None
        #: Who hears of resource updates (`on_resource_updated`).
        self._update_listeners: dict[object, Callable[[str], Awaitable[None]]] = {}

    # -- who is calling -------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Principal:
        """The caller behind an `Authorization` value. Its rate limit is charged per call and per
        routing (see auth.py), by the methods below, not per request."""
        return self.auth.authenticate(authorization)

    # -- listing --------------------------------------------------------------------------

    def functions(self, principal: Principal) -> list[FunctionSpec]:
        return [spec for spec in self.catalog.specs() if principal.allows(spec.qualified_name)]

    def function(self, name: str, principal: Principal, *, feature: bool = False) -> FunctionSpec:
        """The function `name` if `principal` may call it; a name outside its scopes is not found,
        exactly like one that does not exist (and suggestions only name what it may call).
        With `feature`, the resource, prompt or completion of that name instead of a tool."""
        return self.catalog.resolve(name, principal.allows, feature=feature)

    def features(self, principal: Principal) -> list[FunctionSpec]:
        """The MCP resources, prompts and completions `principal` may use (see catalog.py)."""
        return [spec for spec in self.catalog.features() if principal.allows(spec.qualified_name)]

    def resource(
        self, principal: Principal, uri: str, namespace: str = ""
    ) -> tuple[FunctionSpec, dict[str, str]]:
        """The resource function serving `uri` for `principal` (in `namespace` when given) and the
        arguments that read it: a resource of that exact URI first, else the first template (by
        name) that matches. FunctionNotFound, with the URI in its details, when none does."""
        specs = sorted(
            (s for s in self.resources(principal) if not namespace or s.namespace == namespace),
            key=lambda s: s.qualified_name,
        )
        for spec in specs:
            if spec.feature is not None and spec.feature.uri == uri:
                return spec, {}
        for spec in specs:
            found = match_uri(spec.feature.uri, uri) if spec.feature is not None else None
            if found is not None:
                return spec, found
        raise FunctionNotFound("Resource not found", details={"uri": uri})

    def resources(self, principal: Principal) -> list[FunctionSpec]:
        """The functions serving MCP resources (URIs and templates) `principal` may read."""
        return [s for s in self.features(principal) if s.feature is not None and s.feature.kind == RESOURCE]

    async def read_resource(self, principal: Principal, uri: str, options: CallOptions) -> Result:
        """Read the resource at `uri`: call the function serving it with the template's variables
        as arguments. What happened inside it is the Result, as for `invoke`."""
        spec, arguments = self.resource(principal, uri)
        request = InvokeRequest(spec.qualified_name, json.dumps(arguments).encode(), options, feature=True)
        return await self.invoke(principal, request)

    def on_resource_updated(self, listener: Callable[[str], Awaitable[None]]) -> Callable[[], None]:
        """Call `listener` with the URI of each `resource_updated`; returns an unsubscribe."""
        token = object()
        self._update_listeners[token] = listener
        return lambda: self._update_listeners.pop(token, None) and None

    async def resource_updated(self, principal: Principal, uri: str) -> None:
        """Announce that the resource at `uri` changed (a function's `ctx.resource_updated`): the
        listeners (the MCP endpoint's subscriptions) hear it. FunctionNotFound when no resource
        `principal` may read serves it."""
        self.resource(principal, uri)
        for listener in list(self._update_listeners.values()):
            await listener(uri)

    def namespaces(self, principal: Principal) -> list[Namespace]:
        visible = []
        for namespace in self.catalog.namespaces:
            functions = tuple(f for f in namespace.functions if principal.allows(f))
            if functions:
                visible.append(Namespace(namespace.name, namespace.description, functions))
        return visible

    def system_message(self, principal: Principal) -> str:
        """A ready-made developer/system message telling a model which namespaces exist."""
        lines = ["You can call functions, grouped in these namespaces:"]
        for namespace in self.namespaces(principal):
            about = f": {namespace.description.splitlines()[0]}" if namespace.description else ""
            lines.append(f"- {namespace.name} ({len(namespace.functions)} functions){about}")
        loose = [s for s in self.functions(principal) if not s.namespace]
        if loose:
            lines.append("- functions outside any namespace: " + ", ".join(s.name for s in loose))
        lines.append("A function `name` in namespace `ns` is called as the tool `ns__name`.")
        return "\n".join(lines)

    async def tools(self, principal: Principal, request: ToolsRequest) -> dict[str, Any]:
        """The caller's functions as tool definitions; for a query, the top k with their scores."""
        if request.query is None:
            specs = self.functions(principal)
            return {"tools": [tool_definition(s, request.format, strict=request.strict) for s in specs]}
        ranked = await self.route(principal, request.query)
        specs = [self.catalog.resolve(c.key) for c in ranked.candidates]
        return {
            "tools": [tool_definition(s, request.format, strict=request.strict) for s in specs],
            "candidates": ranked.to_dict()["candidates"],
        }

    # -- calling --------------------------------------------------------------------------

    def _call(
        self, spec: FunctionSpec, request: InvokeRequest, longest: float | None = None
    ) -> tuple[Call, float]:
        options = request.options
        longest = longest or self.config.call_timeout
        timeout = min(options.timeout or longest, longest)
        call = Call(
            function=spec.qualified_name,
            arguments=request.arguments,
            request_id=options.request_id or new_request_id(),
            session_id=options.session_id,
            metadata=dict(options.metadata),
            deadline=time.monotonic() + timeout,
            trace=tracing.context(),
            events=request.events,
        )
        return call, timeout

    async def invoke(
        self,
        principal: Principal,
        request: InvokeRequest,
        surface: Surface = Surface.DIRECT,
        longest: float | None = None,
    ) -> Result:
        """Call a function. What happened inside it is the Result; what `surface` refuses
        (see surfaces.py) raises instead. `longest`: the most seconds the call may take, for
        callers the gateway trusts (a job's worker); None: `[gateway] call_timeout`."""
        refusals = REFUSALS[surface]
        started = time.perf_counter()
        spec: FunctionSpec | None = None
        outcome = "unavailable"
        request_id = request.options.request_id or ""
        trace: object = ()
        try:
            await principal.spend()
            spec = self.function(request.name, principal, feature=request.feature)
            call, timeout = self._call(spec, request, longest)
            request_id, trace = call.request_id, call.trace
            with self.drain.track():
                result = await self._run(principal, spec, request, call, timeout)
            outcome = self.metrics.outcome_of(result)
        except ToolmeshError as exc:
            outcome = exc.code
            result = refusals.settle(exc)
        finally:
            seconds = time.perf_counter() - started
            # Calls to names outside the catalog are not counted: clients cannot grow the label set.
            if spec is not None:
                self.metrics.observe(spec.qualified_name, outcome, seconds)
                self.recent.record(principal, request_id, spec.qualified_name, outcome, seconds)
            if self.audit is not None:
                name = spec.qualified_name if spec is not None else request.name
                self.audit.record(
                    principal.name, principal.client_id, name, outcome, seconds, request_id, trace
                )
        return refusals.check(result)

    def _run(
        self, principal: Principal, spec: FunctionSpec, request: InvokeRequest, call: Call, timeout: float
    ) -> Awaitable[Result]:
        """The call on its pool; once per `Idempotency-Key` when it has one (gateway/idempotency/)."""
        idempotent = spec.annotations.idempotent
        run = functools.partial(self.pool.invoke, spec.runtime, call, timeout, idempotent=idempotent)
        key = request.options.idempotency_key
        return self.keyed.run(principal.name, key, spec, request, timeout, run) if key else run()

    async def stream(
        self, principal: Principal, request: InvokeRequest, surface: Surface = Surface.DIRECT
    ) -> AsyncGenerator[list[Content] | Result, None]:
        """Content items as the function yields them, then its Result. Refuses like `invoke` on
        `surface` until the first item is out. After that an error can only end the stream: on
        the direct surface it is raised for the transport to send as its last event, elsewhere
        it becomes the error result.

        Nothing is buffered here: each event is pulled from the pod when the caller asks for
        the next one, so a slow caller pauses the function (see the executor's bounded queue)."""
        refusals = REFUSALS[surface]
        started = time.perf_counter()
        try:
            await principal.spend()
            spec = self.function(request.name, principal)
            if request.options.idempotency_key:
                raise InvalidRequest(
                    "a streamed call takes no Idempotency-Key: send it unstreamed", param="Idempotency-Key"
                )
        except ToolmeshError as exc:
            seconds = time.perf_counter() - started
            rid = request.options.request_id or ""
            if self.audit is not None:
                self.audit.record(principal.name, principal.client_id, request.name, exc.code, seconds, rid)
            yield refusals.settle(exc)
            return
        call, timeout = self._call(spec, request)
        outcome = "unavailable"
        streamed = False
        try:
            with self.drain.track():
                async for event in self.pool.stream(spec.runtime, call, timeout):
                    if isinstance(event, Result):
                        outcome = self.metrics.outcome_of(event)
                        yield event if streamed else refusals.check(event)
                    else:
                        streamed = True
                        yield event
        except ToolmeshError as exc:
            outcome = exc.code
            if streamed and surface is Surface.DIRECT:
                raise  # its transport ends the stream with the error (an SSE event, a gRPC status)
            yield refusals.settle(exc)
        finally:
            seconds = time.perf_counter() - started
            self.metrics.observe(spec.qualified_name, outcome, seconds)
            self.recent.record(principal, call.request_id, spec.qualified_name, outcome, seconds)
            if self.audit is not None:
                self.audit.record(
                    principal.name,
                    principal.client_id,
                    spec.qualified_name,
                    outcome,
                    seconds,
                    call.request_id,
                    call.trace,
                )

    async def execute_batch(
        self,
        principal: Principal,
        calls: Sequence[tuple[str, bytes, ToolmeshError | None]],
        options: CallOptions | None = None,
    ) -> list[Result]:
        """Run a batch of calls concurrently; each failure becomes that call's error result.
        A call whose arguments could not be read carries its problem instead of arguments."""

        async def one(index: int, name: str, arguments: bytes, problem: ToolmeshError | None) -> Result:
            if problem is None:
                request = InvokeRequest(name, arguments, (options or CallOptions()).item(index))
                return await self.invoke(principal, request, Surface.BATCH)
            try:
                await principal.spend()
                if name:
                    # An unknown or forbidden function says more than its broken arguments.
                    self.function(name, principal)
                raise problem
            except ToolmeshError as exc:
                return REFUSALS[Surface.BATCH].settle(exc)

        if len(calls) == 1:  # no task and no gather for a lone call: the same result or error
            return [await one(0, *calls[0])]
        return list(await asyncio.gather(*(one(i, *call) for i, call in enumerate(calls))))

    # -- free text --------------------------------------------------------------------------

    async def route(self, principal: Principal, request: RouteRequest) -> RouteResult:
        """Rank the functions `principal` may call for the prompt (one unit of its rate limit)."""
        await principal.spend()
        with tracing.span("toolmesh.route", {"toolmesh.k": request.k or 0}):
            return await free_text.rank(self.router, principal.allows, request)

    async def execute(self, principal: Principal, request: ExecuteRequest) -> Execution:
        """Route the prompt and extract the arguments; run the call when the free-text policy
        lets it run at once (a read_only function), else answer the planned call with a
        confirmation to send to `confirm` (gateway/core/free_text.py)."""
        options = request.options
        session = request.route.session_id or options.session_id
        executor = self.router.executor()
        prompt = request.route.prompt
        # The route span: routing, argument extraction and the call, as one step of the request.
        with tracing.span("toolmesh.execute", {"toolmesh.dry_run": request.dry_run}):
            execution = await executor.plan(
                prompt,
                k=request.route.k or self.router.config.k,
                session_id=request.route.session_id,
                allowed=principal.allows,
                base_url=request.base_url,
                with_key=not self.auth.open,
            )
            spec = self.function(execution.function, principal)
            judged = verdict(spec, execution.sources)
            if judged.confirm:
                execution.confirmation = {
                    "reason": judged.reason,
                    "destructive": judged.destructive,
                    "carried": carried_arguments(execution.sources),
                }
            if judged.never:
                planned = {k: v for k, v in execution.to_dict().items() if k in PLANNED_CALL}
                raise NotFromFreeText(judged.reason, param="prompt", details=planned)
            if request.dry_run or judged.confirm:
                # No call follows to count against the rate limit: the routing counts instead.
                await principal.spend()
                if judged.confirm and not request.dry_run:
                    await self._await_confirmation(principal, execution, prompt, request.route.session_id)
                await executor.record(request.route.session_id, prompt, execution)
                return execution
            caller = self._caller(principal, options, session)
            return await executor.run(execution, caller, prompt, session_id=request.route.session_id)

    async def _await_confirmation(
        self, principal: Principal, execution: Execution, prompt: str, session: str | None
    ) -> None:
        """Keep the planned call for `confirm`, and put its token in the answer."""
        assert execution.confirmation is not None
        pending = PendingCall(
            principal=principal.name,
            function=execution.function,
            arguments=execution.arguments,
            sources=execution.sources,
            prompt=prompt,
            session_id=session,
            routing_id=execution.route.routing_id,
            match=execution.route.match,
            follow_up=execution.follow_up,
            code=execution.code,
        )
        ttl = self.router.config.confirmation_ttl
        token = await self.confirmations.put(pending, ttl)
        execution.confirmation = {**execution.confirmation, "token": token, "expires_in": ttl}

    async def confirm(self, principal: Principal, request: ConfirmRequest) -> Execution:
        """Run the free-text call a confirmation stands for, once, exactly as it was planned
        (its function, its arguments), for the caller it was planned for. A confirmed call is
        evidence the router chose right: a caller holding `@learn` teaches it the prompt."""
        executor = self.router.executor()
        pending = await self.confirmations.take(request.token, principal.name)
        # The caller's scopes may have changed since: it must still be allowed the function.
        self.function(pending.function, principal)
        route = RouteResult(pending.match, [], pending.routing_id)
        execution = Execution(
            pending.function,
            pending.arguments,
            pending.sources,
            route,
            code=pending.code,
            follow_up=pending.follow_up,
            session_id=pending.session_id,
        )
        options = request.options
        caller = self._caller(principal, options, pending.session_id or options.session_id)
        with tracing.span("toolmesh.execute", {"toolmesh.confirmed": True}):
            return await executor.run(
                execution,
                caller,
                pending.prompt,
                session_id=pending.session_id,
                learn_as=principal.name if principal.may(LEARN) else None,
            )

    def _caller(self, principal: Principal, options: CallOptions, session: str | None) -> FunctionCaller:
        """Free text's way to call a function: a direct invoke, its result as JSON."""

        async def call(function: str, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
            invocation = InvokeRequest(
                function,
                json.dumps(dict(arguments)).encode(),
                CallOptions(options.request_id, session or "", options.metadata, options.timeout),
            )
            answer: Mapping[str, Any] = json.loads(result_json(await self.invoke(principal, invocation)))
            return answer

        return call

    async def route_feedback(
        self, principal: Principal, routing_id: str, function: str | None
    ) -> dict[str, Any]:
        """Teach the router that `function` was right for a recent routing's prompt, or (None)
        that the routing's match was wrong; needs `@learn`. A match other than `function` loses
        what it learned of the prompt (router/learning.py `near_duplicates`)."""
        principal.require(LEARN, "teach the router")
        right = None if function is None else self.function(function, principal).qualified_name
        router = self.router.router()
        # Off the loop: the routings' memory may be in Redis (gateway/state/redis_learning.py).
        routed = await self.router.in_worker(functools.partial(router.routed, routing_id))
        if routed is None:
            raise InvalidRequest("unknown routing_id: it must come from a recent routing", param="routing_id")
        unlearned: dict[str, list[str]] = {}
        if routed.match is not None and routed.match != right:
            removed = await self.router.in_worker(
                functools.partial(router.unlearn, routed.match, routed.prompt)
            )
            if removed:
                unlearned[routed.match] = removed
        if right is None:
            return {"function": None, "learned": None, "learned_examples": 0, "unlearned": unlearned}
        learn = functools.partial(router.learn, right, routed.prompt, principal.name)
        examples = await self.router.in_worker(learn) or []
        return {
            "function": right,
            "learned": routed.prompt,
            "learned_examples": len(examples),
            "unlearned": unlearned,
        }

    # -- operations -------------------------------------------------------------------------

    async def reload(self, principal: Principal, runtime: str | None = None) -> ReloadReport:
        """Reload one runtime (default: all) with no call failing; needs the `@admin` permission."""
        principal.require(ADMIN, "reload runtimes")
        return await self.reloader.reload(None if runtime is None else [runtime])

    def recent_invocations(self, principal: Principal, limit: int) -> list[InvocationRecord]:
        """This gateway's last calls `principal` may see, newest first (see recent_invocations.py)."""
        return self.recent.latest(principal, limit)
