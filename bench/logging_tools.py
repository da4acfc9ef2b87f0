"""Functions the MCP call-event benchmark calls: one that takes a context and logs nothing, one that
logs three info records."""

from __future__ import annotations

import toolmesh


async def noop_ctx(ctx: toolmesh.Context) -> None:
    """Take a context (so a wanted log level builds the call's event channel) and do nothing."""


async def logs3(ctx: toolmesh.Context) -> None:
    """Log three info records."""
    ctx.logger.info("one")
    ctx.logger.info("two", extra={"n": 2})
    ctx.logger.info("three")
