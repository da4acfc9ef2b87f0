"""`RemoteMcpRuntime`: a remote MCP server's tools, called over Streamable HTTP or HTTP+SSE by the
gateway.

One pooled httpx client and one MCP session per runtime (transports.py: http_session.py or
sse_session.py), no pods. The tools are
listed at start and on reload, and again when the server says they changed (its `list_changed`
notifications): the pool then has the catalog follow, as after a reload. A server that cannot be
reached at start does not stop the gateway: the runtime logs why, serves nothing and is not ready,
and the pool tries again in the background (gateway/pool/startup/), a reload at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from toolmesh.config.runtime_config import RuntimeConfig
from toolmesh.errors import FunctionNotFound, FunctionTimeout, InputRequired, InvalidArguments, Unavailable
from toolmesh.gateway.sources.base.service_runtime import GatewaySource, call_arguments
from toolmesh.gateway.sources.remote_mcp.http_wire import McpHttpError, McpRpcError
from toolmesh.gateway.sources.remote_mcp.input_rounds import CannotAnswer
from toolmesh.gateway.sources.remote_mcp.mcp_events import CallNotifications
from toolmesh.gateway.sources.remote_mcp.mcp_features import (
    COMPLETE,
    PROMPTS_GET,
    RESOURCES_READ,
    TOOLS_CALL,
    McpTarget,
    completion_result,
    completion_specs,
    prompt_result,
    prompt_specs,
    read_result,
    request_of,
    resource_specs,
)
from toolmesh.gateway.sources.remote_mcp.mcp_results import call_result, tool_specs
from toolmesh.gateway.sources.remote_mcp.transports import McpSession, open_session
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.asking import Asker, input_required_result
from toolmesh.runtimes.functions.results import Content, ErrorInfo, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, name_limit
from toolmesh.runtimes.mcp.server_asks import Answerer, answerer

log = logging.getLogger("toolmesh.sources")

#: Connections kept open to one server.
MAX_CONNECTIONS = 100
#: Pages of `tools/list` read at most (a server whose cursor never ends).
MAX_PAGES = 100
#: JSON-RPC's "invalid params": the tool's arguments were refused.
INVALID_PARAMS = -32602


class RemoteMcpRuntime(GatewaySource):
    """A runtime whose functions are the tools of a remote MCP server."""

    def __init__(self, config: RuntimeConfig, headers: Mapping[str, str]) -> None:
        """`headers` go with every request: the runtime's `headers`, their values read at start-up
        (never a caller's)."""
        assert config.mcp_url is not None
        super().__init__(config)
        self._headers = dict(headers)
        self._targets: dict[str, McpTarget] = {}
        self._session: McpSession | None = None
        self._client: httpx.AsyncClient | None = None
        #: Listing the server again after its `list_changed`, while it does; `_stale` when it
        #: said so again meanwhile.
        self._relisting: asyncio.Task[None] | None = None
        self._stale = False

    @property
    def ready(self) -> bool:
        return self._session is not None

    async def start(self, *, strict: bool = False) -> None:
        """Connect and list the tools. When that fails, log why and serve nothing (or with
        `strict`, as a reload does, raise and keep what was served)."""
        config = self.config
        assert config.mcp_url is not None
        client = httpx.AsyncClient(
            # Calls are bounded by their own limit (asyncio.timeout), not by a read timeout.
            timeout=httpx.Timeout(
                max(config.timeout, config.startup_timeout), connect=config.startup_timeout
            ),
            limits=httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS),
        )
        session = open_session(
            client, config.mcp_url, self._headers, self._heard_changed, config.roots, config.mcp_transport
        )
        try:
            async with asyncio.timeout(config.startup_timeout):
                found = await _list(session, config)
        except (McpHttpError, McpRpcError, TimeoutError) as exc:
            await session.close()
            await client.aclose()
            cause = (
                str(exc)
                if not isinstance(exc, TimeoutError)
                else f"no tools within {config.startup_timeout:g} s"
            )
            message = f"runtime {self.name!r}: MCP server {config.mcp_url}: {cause}"
            if strict:
                raise Unavailable(message) from None
            log.error("%s; it serves no functions", message, extra={"runtime": self.name})
            self.error = message
            return
        except BaseException:
            # Cancelled (the gateway stops while it loads in the background): nothing left open.
            await session.close()
            await client.aclose()
            raise
        old_session, old_client = self._session, self._client
        self._session, self._client = session, client
        self._targets = {name: target for name, (target, _) in found.items()}
        self.specs = [spec for _, spec in found.values()]
        self.error = None
        if old_session is not None:
            await old_session.close()
        if old_client is not None:
            await old_client.aclose()

    def _heard_changed(self, method: str) -> None:
        self._stale = True
        if self._relisting is None or self._relisting.done():
            self._relisting = asyncio.get_running_loop().create_task(self._relist())

    async def _relist(self) -> None:
        """List the server again (as often as it said its lists changed meanwhile), then tell the
        pool; a failure keeps what was served."""
        config = self.config
        while self._stale and (session := self._session) is not None:
            self._stale = False
            try:
                async with asyncio.timeout(config.startup_timeout):
                    found = await _list(session, config)
            except (McpHttpError, McpRpcError, TimeoutError) as exc:
                log.warning(
                    "runtime %r: the MCP server's lists changed but could not be read again: %s",
                    self.name,
                    str(exc) or type(exc).__name__,
                    extra={"runtime": self.name},
                )
                return
            self._targets = {name: target for name, (target, _) in found.items()}
            self.specs = [spec for _, spec in found.values()]
            if self.listing_changed is not None:
                await self.listing_changed()

    async def close(self) -> None:
        relisting, self._relisting = self._relisting, None
        if relisting is not None:
            relisting.cancel()
        session, self._session = self._session, None
        client, self._client = self._client, None
        if session is not None:
            await session.close()
        if client is not None:
            await client.aclose()

    async def invoke(self, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        started = time.perf_counter()
        name = call.function.rpartition(".")[2]
        target = self._targets.get(name)
        session = self._session
        if target is None or session is None:
            raise FunctionNotFound(f"runtime {self.name!r} has no function {call.function!r}")
        limit = min(timeout, self.config.timeout)
        params = request_of(target, call_arguments(call.arguments))
        listener = call.events
        heard, log_level = None, None
        if listener is not None and listener.wants_anything:
            notifications = CallNotifications(listener, call.function, call.request_id or "call")
            heard, log_level = notifications.heard, notifications.log_level
            if listener.progress:
                params["_meta"] = {"progressToken": notifications.token}
        self._inflight += 1
        try:
            async with asyncio.timeout(limit):
                answer = await session.request(target.method, params, heard, log_level, _answerer(call))
        except TimeoutError:
            raise FunctionTimeout(
                f"{_what(target)} of {self.name!r} did not answer within {limit:g} s"
            ) from None
        except InputRequired as exc:
            # The server asked the caller what the call's answers do not hold yet.
            result = input_required_result(exc)
        except McpRpcError as exc:
            if exc.code == INVALID_PARAMS:
                raise InvalidArguments(f"{call.function}: {exc}", ()) from None
            result = Result.failure(ErrorInfo("function_error", f"{_what(target)} failed: {exc}"))
        except CannotAnswer as exc:
            result = Result.failure(ErrorInfo("function_error", f"{_what(target)} failed: the server {exc}"))
        except McpHttpError as exc:
            raise Unavailable(f"runtime {self.name!r}: MCP server {self.config.mcp_url}: {exc}") from None
        else:
            result = _RESULTS[target.method](answer)
        finally:
            self._inflight -= 1
        result.duration_ms = (time.perf_counter() - started) * 1000
        result.request_id = call.request_id
        return result

    async def stream(self, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        yield await self.invoke(call, timeout)


_RESULTS = {
    TOOLS_CALL: call_result,
    RESOURCES_READ: read_result,
    PROMPTS_GET: prompt_result,
    COMPLETE: completion_result,
}


def _answerer(call: Call) -> Answerer:
    """What answers the server's requests during `call`: its caller, by replay (server_asks.py)."""
    asker = Asker(call.function, call.metadata)
    return answerer(lambda kind, params: asker.ask([(kind, None, params)])[0], asker.can_answer)


def _what(target: McpTarget) -> str:
    if target.method == COMPLETE:
        return f"completion of {target.argument!r} of {target.name!r}"
    kind = {TOOLS_CALL: "tool", RESOURCES_READ: "resource", PROMPTS_GET: "prompt"}[target.method]
    return f"{kind} {target.name!r}"


async def _list(session: McpSession, config: RuntimeConfig) -> dict[str, tuple[McpTarget, FunctionSpec]]:
    """Every function the server brings: its tools (those `include`/`exclude` keep), and the
    resources, resource templates and prompts it says it has, and their arguments' completions
    when it says it completes."""
    taken: set[str] = set()
    tools = tool_specs(
        await _pages(session, "tools/list", "tools"), config.name, config.include, config.exclude, taken
    )
    found = {name: (McpTarget(TOOLS_CALL, raw), spec) for name, (raw, spec) in tools.items()}
    capabilities = (session.server or {}).get("capabilities") or {}
    limit = name_limit(config.name)
    templates: list[dict[str, Any]] = []
    prompts: list[dict[str, Any]] = []
    if "resources" in capabilities:
        resources = await _pages(session, "resources/list", "resources")
        templates = await _pages(session, "resources/templates/list", "resourceTemplates")
        found.update(resource_specs(resources, templates, config.name, limit, taken))
    if "prompts" in capabilities:
        prompts = await _pages(session, "prompts/list", "prompts")
        found.update(prompt_specs(prompts, config.name, limit, taken))
    if "completions" in capabilities:
        names = {target.name: name for name, (target, _) in found.items() if target.method == PROMPTS_GET}
        found.update(completion_specs(prompts, names, templates, config.name, limit, taken))
    return found


async def _pages(session: McpSession, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await session.request(method, {"cursor": cursor} if cursor else None)
        if not isinstance(page, dict):
            raise McpHttpError(f"{method} answered no list")
        items.extend(item for item in page.get(key) or () if isinstance(item, dict))
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return items
