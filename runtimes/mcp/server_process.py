"""One stdio MCP server process and the session to it (stdio_session.py), started on first use in
a pod. When the server exits between calls, the next call starts a new one; when it exits during
calls, they raise `ExitedMidCall` (the bridge then ends its pod, so the pool treats the crash as a
pod's: see mcp_bridge.py). A JSON-RPC error answer is raised as `RpcError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmesh.runtimes.mcp.server_asks import Answerer
from toolmesh.runtimes.mcp.stdio_session import METHOD_NOT_FOUND, Heard, RpcError, ServerExited, StdioSession

#: Pages of `tools/list` read at most (a server whose cursor never ends).
MAX_PAGES = 100
#: Seconds a server has to start, shake hands and list what it brings, in the template: less than
#: the gateway waits for a template (gateway/pool/launcher.py), so the cause it logs is this one.
LIST_TIMEOUT = 45.0

__all__ = [
    "ExitedMidCall",
    "Listing",
    "RpcError",
    "ServerExited",
    "ServerProcess",
    "list_server",
    "list_session",
]


class ExitedMidCall(ServerExited):
    """The server ended while it was answering a call: the call may have run."""


@dataclass
class Listing:
    """What a server brings, as its JSON: its tools, and the resources, resource templates and
    prompts it says (in its capabilities) that it has."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    #: Whether it answers `completion/complete`.
    completes: bool = False
    #: What it said it has but could not list (the method and its error): those are not served,
    #: its tools still are.
    unlisted: list[str] = field(default_factory=list)


async def list_server(command: Sequence[str], roots: bool = False, timeout: float = LIST_TIMEOUT) -> Listing:
    """Everything the server brings, from a server started for the purpose and stopped after
    (offered roots when `roots`, as the pods' servers are: some list more then); ServerExited
    naming the command and the cause when it cannot be listed."""
    shown = " ".join(command)
    session: StdioSession | None = None
    try:
        async with asyncio.timeout(timeout):
            # Its own process group: the template outlives the listing, so nothing would end what
            # a wrapper command started and left behind.
            session = await StdioSession.start(command, roots=roots, own_group=True)
            return await list_session(session)
    except TimeoutError:
        raise ServerExited(
            f"the MCP server {shown!r} did not list its tools within {timeout:g} s (is it an "
            "`npx -y` or `uvx` that downloads on its first start? install it first)"
        ) from None
    except RpcError as exc:
        raise ServerExited(
            f"the MCP server {shown!r} did not list its tools: it answered an error: {exc}"
        ) from None
    except ServerExited as exc:
        raise ServerExited(f"the MCP server {shown!r} did not list its tools: {exc}") from None
    finally:
        if session is not None:
            await session.close()


async def list_session(session: StdioSession) -> Listing:
    """Everything a started server brings; RpcError or ServerExited when it cannot list its
    tools. An error answer to one of the other lists leaves that list empty (and says so in
    `unlisted`): a server whose resources need a database that is down (server-postgres), or that
    says it has resources but has no templates method (SDK servers that list only resources),
    still serves its tools."""
    capabilities = session.server.get("capabilities") or {}
    listing = Listing(await _pages(session, "tools/list", "tools"))

    async def optional(method: str, key: str) -> list[dict[str, Any]]:
        try:
            return await _pages(session, method, key)
        except RpcError as exc:
            # No templates method is a server's way to say it has none.
            if not (method == "resources/templates/list" and exc.code == METHOD_NOT_FOUND):
                listing.unlisted.append(f"{method} answered an error: {exc}")
            return []

    if "resources" in capabilities:
        listing.resources = await optional("resources/list", "resources")
        listing.templates = await optional("resources/templates/list", "resourceTemplates")
    if "prompts" in capabilities:
        listing.prompts = await optional("prompts/list", "prompts")
    listing.completes = "completions" in capabilities
    return listing


async def _pages(session: StdioSession, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await session.request(method, {"cursor": cursor} if cursor else None)
        if not isinstance(page, dict):
            raise ServerExited(f"{method} answered no list")
        items.extend(item for item in page.get(key) or () if isinstance(item, dict))
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return items


class ServerProcess:
    def __init__(
        self, command: Sequence[str], changed: Callable[[str], None] | None = None, roots: bool = False
    ) -> None:
        """`changed` hears the server's `list_changed` notifications (their method); `roots`
        offers the server roots."""
        self._command = list(command)
        self._roots = roots
        self._changed = changed
        self._session: StdioSession | None = None
        self._starting = asyncio.Lock()

    async def session(self) -> StdioSession:
        session = self._session
        if session is not None and session.alive:
            return session
        async with self._starting:
            session = self._session
            if session is not None and session.alive:
                return session
            self._session = None
            if session is not None:
                await session.close()
            self._session = await StdioSession.start(self._command, changed=self._changed, roots=self._roots)
            return self._session

    async def listing(self) -> Listing:
        """Everything the server brings now (RpcError, ServerExited when it cannot say)."""
        return await list_session(await self.session())

    async def call(
        self, name: str, arguments: dict[str, Any], timeout: float | None, heard: Heard | None = None
    ) -> Any:
        """The `tools/call` result (a CallToolResult's JSON); `heard` gets its progress and logs."""
        return await self.request("tools/call", {"name": name, "arguments": arguments}, timeout, heard)

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | None = None,
        heard: Heard | None = None,
        answer: Answerer | None = None,
    ) -> Any:
        """`method`'s result: RpcError for an error answer, ExitedMidCall when the server ends
        before it answers, ServerExited when it cannot be started. `answer` answers what the
        server asks the client meanwhile (see StdioSession.request)."""
        session = await self.session()
        try:
            if timeout is None:
                return await session.request(method, params, heard, answer)
            async with asyncio.timeout(timeout):
                return await session.request(method, params, heard, answer)
        except ServerExited as exc:
            raise ExitedMidCall(
                f"the MCP server {self._command[0]!r} exited during the call: {exc}"
            ) from None

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
