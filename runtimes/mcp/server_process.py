"""One stdio MCP server process and the client session to it, started on first use in a pod.

The official SDK's session lives in a task of its own (its context must be entered and left in one
task); calls wait for it to be ready. When the server exits, the calls in flight fail naming the
exit, and the next call starts a new server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, PaginatedRequestParams


class ServerExited(RuntimeError):
    """The MCP server process ended (or never started); the message says how."""


def parameters(command: Sequence[str]) -> StdioServerParameters:
    # The pod's environment, whole: the runtime's `env` reached it already.
    return StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ))


async def list_tools(command: Sequence[str]) -> list[Any]:
    """The server's tools, from a server started for the purpose and stopped after; ServerExited
    naming the command and the cause when it cannot be."""
    try:
        return await _list_tools(command)
    except Exception as exc:
        shown = " ".join(command)
        raise ServerExited(f"the MCP server {shown!r} did not list its tools: {_cause(exc)}") from None


def _cause(exc: BaseException) -> str:
    """The first leaf of an exception group (the SDK's task groups wrap everything)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


async def _list_tools(command: Sequence[str]) -> list[Any]:
    tools: list[Any] = []
    async with stdio_client(parameters(command)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        cursor: str | None = None
        while True:
            page = await session.list_tools(
                params=None if cursor is None else PaginatedRequestParams(cursor=cursor)
            )
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools


class ServerProcess:
    def __init__(self, command: Sequence[str]) -> None:
        self._command = list(command)
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[ClientSession] | None = None

    async def session(self) -> ClientSession:
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            self._task = loop.create_task(self._run(self._ready))
        assert self._ready is not None
        return await asyncio.shield(self._ready)

    async def _run(self, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with (
                stdio_client(parameters(self._command)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                ready.set_result(session)
                await asyncio.Event().wait()  # serve until cancelled (the pod stops)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(
                    ServerExited(f"the MCP server {self._command[0]!r} did not start: {exc!r}")
                )

    async def call(self, name: str, arguments: dict[str, Any], timeout: float | None) -> Any:
        session = await self.session()
        try:
            return await session.call_tool(name, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED and self._task is not None and not self._task.done():
                raise ServerExited(f"the MCP server refused the call: {exc}") from None
            self.reset()
            raise ServerExited(f"the MCP server {self._command[0]!r} exited during the call: {exc}") from None
        except Exception as exc:
            # The server may be gone: start a new one for the next call.
            self.reset()
            raise ServerExited(f"the MCP server {self._command[0]!r} failed the call: {exc}") from None

    def reset(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
