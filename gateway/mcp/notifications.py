"""A tools/call's log records and progress reports as MCP notifications on that call's stream.

Which records a call gets (the server is stateless, so a level cannot live in a session):

- 2026-07-28: the request's ``_meta["io.modelcontextprotocol/logLevel"]``, that level and above;
  without it, none (the spec: the server MUST NOT send `notifications/message` to a request that
  did not opt in). `logging/setLevel` is gone in that era.
- 2025 handshake era: the same `_meta` key when a client sends it; otherwise the level the client
  last set with `logging/setLevel` under the same ``X-Session-Id`` header and API key on this
  replica (`SessionLevels`, bounded, in memory); otherwise `DEFAULT_LEVEL` (info). A stateless
  server has no `Mcp-Session-Id` to hang a setLevel on, and a client that never called setLevel
  still expects the function's info and above, as from a server keeping sessions.

Progress: `notifications/progress` with the client's token when it sent one (`ctx.report_progress`;
a generator's items are its progress instead, see endpoint.py).

The pod already bounds what one call sends (runtimes/functions/call_events.py); `CallNotifier`
bounds it again (`MAX_EVENTS`) so that a remote pod that does not cannot flood a client.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Mapping
from typing import Any, get_args

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolmesh.runtimes.functions.call_events import (
    MAX_LOG_EVENTS,
    MAX_PROGRESS_EVENTS,
    CallEvent,
    Listener,
    LogEvent,
)

log = logging.getLogger("toolmesh.gateway")

#: A handshake-era call's level when the client asked for none.
DEFAULT_LEVEL: types.LoggingLevel = "info"
#: Most `X-Session-Id`s whose setLevel a replica remembers (the oldest are forgotten first).
MAX_SESSIONS = 10_000
#: Most events one call forwards: what a pod sends at most, with room for the held last report.
MAX_EVENTS = MAX_LOG_EVENTS + MAX_PROGRESS_EVENTS + 1

MCP_LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)
#: The lowest Python level of each MCP (syslog) level. "debug" takes everything below info too.
_PYTHON_LEVELS: dict[types.LoggingLevel, int] = {
    "debug": 1,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 60,
    "emergency": 70,
}


def python_level(level: types.LoggingLevel) -> int:
    return _PYTHON_LEVELS[level]


def mcp_level(level: int) -> types.LoggingLevel:
    """The MCP level of a Python record: the highest whose threshold it reaches."""
    found: types.LoggingLevel = "debug"
    for name in MCP_LEVELS:
        if level >= _PYTHON_LEVELS[name]:
            found = name
    return found


class SessionLevels:
    """The handshake era's `logging/setLevel`, remembered per (API key, X-Session-Id) on this
    replica, so that a client sending both gets what it asked for on its later calls."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._limit = limit
        self._levels: collections.OrderedDict[tuple[str, str], types.LoggingLevel] = collections.OrderedDict()

    def set(self, key: str, session: str, level: types.LoggingLevel) -> None:
        self._levels[(key, session)] = level
        self._levels.move_to_end((key, session))
        while len(self._levels) > self._limit:
            self._levels.popitem(last=False)

    def get(self, key: str, session: str) -> types.LoggingLevel | None:
        return self._levels.get((key, session))


def requested_level(
    ctx: ServerRequestContext[Any, Any], remembered: types.LoggingLevel | None
) -> types.LoggingLevel | None:
    """The level of records a tools/call gets, or None for none (see the module's docstring)."""
    meta: Mapping[str, Any] = ctx.meta or {}
    asked = meta.get(LOG_LEVEL_META_KEY)
    if asked in _PYTHON_LEVELS:
        level: types.LoggingLevel = asked
        return level
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return remembered or DEFAULT_LEVEL


class CallNotifier:
    """Sends one call's events to the client, in order, on the call's response stream.

    Events arrive on the event loop's thread from the pod's transport (`deliver`); they are sent
    by a task started at the first one, so a call that produces none costs nothing. `finish`
    waits until all are out: the result goes after them."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], log_level: int, progress: bool) -> None:
        self._ctx = ctx
        self._queue: asyncio.Queue[CallEvent | None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._count = 0
        self.listener = Listener(log_level, progress, self._deliver)

    def _deliver(self, event: CallEvent) -> None:
        self._count += 1
        if self._count > MAX_EVENTS:
            return
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._send_all())
        self._queue.put_nowait(event)

    async def finish(self) -> None:
        if self._queue is None or self._task is None:
            return
        self._queue.put_nowait(None)
        await self._task

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _send_all(self) -> None:
        assert self._queue is not None
        while (event := await self._queue.get()) is not None:
            try:
                await self._send(event)
            except Exception as exc:  # the client went away: the call itself goes on
                log.debug("an MCP notification was not sent: %s", exc)

    async def _send(self, event: CallEvent) -> None:
        ctx = self._ctx
        if isinstance(event, LogEvent):
            params = types.LoggingMessageNotificationParams(
                level=mcp_level(event.level), logger=event.logger, data=event.data()
            )
            notification = types.LoggingMessageNotification(params=params)
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
        else:
            await ctx.session.report_progress(event.progress, event.total, event.message)
