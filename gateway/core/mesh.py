"""The gateway's core: list, invoke and batch-execute functions for a principal.

HTTP routes, the gRPC Mesh service and (later) MCP are thin adapters over this
class; it knows nothing of any transport.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

from toolmesh.config import GatewayConfig
from toolmesh.errors import FunctionTimeout, InvalidArguments, ToolmeshError
from toolmesh.gateway.core.auth import Authenticator, Principal
from toolmesh.gateway.core.catalog import Catalog, Namespace
from toolmesh.gateway.core.metrics import GatewayMetrics
from toolmesh.gateway.pool.runtime_pool import RuntimePool
from toolmesh.runtimes.functions.results import Content, ErrorInfo, Result
from toolmesh.runtimes.functions.spec import FunctionSpec
from toolmesh.runtimes.pod.executor import Call, new_request_id


@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call details a caller may set."""

    request_id: str = ""
    session_id: str = ""
    metadata: Mapping[str, str] | None = None
    #: Seconds the caller will wait; None for the gateway's default.
    timeout: float | None = None


def raise_for_call_error(result: Result) -> None:
    """Raise the error a direct call reports as an HTTP/gRPC status rather than
    a result: arguments that break the schema (422) and timeouts (504). A
    function that raised stays a result (`is_error`) for the caller to read."""
    if result.error is not None and result.error.code in (InvalidArguments.code, FunctionTimeout.code):
        raise result.error.to_exception()


class Mesh:
    def __init__(
        self,
        catalog: Catalog,
        pool: RuntimePool,
        auth: Authenticator,
        config: GatewayConfig,
        metrics: GatewayMetrics | None = None,
    ) -> None:
        self.catalog = catalog
        self.pool = pool
        self.auth = auth
        self.config = config
        self.metrics = metrics or GatewayMetrics()

    # -- who is calling -------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Principal:
        """The caller behind an `Authorization` value, after counting the request against its rate."""
        principal = self.auth.authenticate(authorization)
        principal.spend()
        return principal

    # -- listing --------------------------------------------------------------------------

    def functions(self, principal: Principal) -> list[FunctionSpec]:
        return [spec for spec in self.catalog.specs() if principal.allows(spec.qualified_name)]

    def function(self, name: str, principal: Principal) -> FunctionSpec:
        spec = self.catalog.resolve(name)
        principal.check(spec.qualified_name)
        return spec

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

    # -- calling --------------------------------------------------------------------------

    def _call(self, spec: FunctionSpec, arguments: bytes, options: CallOptions) -> tuple[Call, float]:
        timeout = min(options.timeout or self.config.call_timeout, self.config.call_timeout)
        call = Call(
            function=spec.qualified_name,
            arguments=arguments,
            request_id=options.request_id or new_request_id(),
            session_id=options.session_id,
            metadata=dict(options.metadata or {}),
            deadline=time.monotonic() + timeout,
        )
        return call, timeout

    async def invoke(
        self, principal: Principal, name: str, arguments: bytes, options: CallOptions = CallOptions()
    ) -> Result:
        """Call a function. Problems with the call itself (unknown name, scope, the
        runtime being unavailable) raise; what happened inside the function is the Result."""
        started = time.perf_counter()
        spec = self.function(name, principal)
        call, timeout = self._call(spec, arguments, options)
        outcome = "unavailable"
        try:
            result = await self.pool.invoke(
                spec.runtime, call, timeout, idempotent=spec.annotations.idempotent
            )
            outcome = self.metrics.outcome_of(result)
            return result
        except ToolmeshError as exc:
            outcome = exc.code
            raise
        finally:
            self.metrics.observe(spec.qualified_name, outcome, time.perf_counter() - started)

    async def stream(
        self, principal: Principal, name: str, arguments: bytes, options: CallOptions = CallOptions()
    ) -> AsyncIterator[list[Content] | Result]:
        started = time.perf_counter()
        spec = self.function(name, principal)
        call, timeout = self._call(spec, arguments, options)
        outcome = "unavailable"
        try:
            async for event in self.pool.stream(spec.runtime, call, timeout):
                if isinstance(event, Result):
                    outcome = self.metrics.outcome_of(event)
                yield event
        except ToolmeshError as exc:
            outcome = exc.code
            raise
        finally:
            self.metrics.observe(spec.qualified_name, outcome, time.perf_counter() - started)

    async def execute(
        self,
        principal: Principal,
        calls: Sequence[tuple[str, bytes, ToolmeshError | None]],
        options: CallOptions = CallOptions(),
    ) -> list[Result]:
        """Run a batch of calls concurrently; each failure becomes that call's error result."""

        async def one(name: str, arguments: bytes, problem: ToolmeshError | None) -> Result:
            try:
                if problem is not None:
                    if name:
                        # An unknown or forbidden function says more than its broken arguments.
                        self.function(name, principal)
                    raise problem
                return await self.invoke(principal, name, arguments, options)
            except ToolmeshError as exc:
                return Result.failure(ErrorInfo.from_exception(exc))

        return list(await asyncio.gather(*(one(*call) for call in calls)))
