"""One stdio MCP server process and the session to it (stdio_session.py), started on first use in
a pod. When the server exits, the calls in flight fail naming the exit, and the next call starts
a new server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from toolmesh.runtimes.mcp.stdio_session import Heard, RpcError, ServerExited, StdioSession

#: Pages of `tools/list` read at most (a server whose cursor never ends).
MAX_PAGES = 100

__all__ = ["ServerExited", "ServerProcess", "list_tools"]


async def list_tools(command: Sequence[str]) -> list[dict[str, Any]]:
    """The server's tools (their JSON), from a server started for the purpose and stopped after;
    ServerExited naming the command and the cause when it cannot be."""
    shown = " ".join(command)
    try:
        session = await StdioSession.start(command)
    except ServerExited as exc:
        raise ServerExited(f"the MCP server {shown!r} did not list its tools: {exc}") from None
    try:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await session.request("tools/list", {"cursor": cursor} if cursor else None)
            if not isinstance(page, dict):
                raise ServerExited("tools/list answered no list")
            tools.extend(tool for tool in page.get("tools") or () if isinstance(tool, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return tools
    except (ServerExited, RpcError) as exc:
        raise ServerExited(f"the MCP server {shown!r} did not list its tools: {exc}") from None
    finally:
        await session.close()


class ServerProcess:
    def __init__(self, command: Sequence[str]) -> None:
        self._command = list(command)
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
            self._session = await StdioSession.start(self._command)
            return self._session

    async def call(
        self, name: str, arguments: dict[str, Any], timeout: float | None, heard: Heard | None = None
    ) -> Any:
        """The `tools/call` result (a CallToolResult's JSON); `heard` gets its progress and logs."""
        session = await self.session()
        params = {"name": name, "arguments": arguments}
        try:
            if timeout is None:
                return await session.request("tools/call", params, heard)
            async with asyncio.timeout(timeout):
                return await session.request("tools/call", params, heard)
        except RpcError as exc:
            raise ServerExited(f"the MCP server refused the call: {exc}") from None
        except ServerExited as exc:
            raise ServerExited(f"the MCP server {self._command[0]!r} exited during the call: {exc}") from None

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()
