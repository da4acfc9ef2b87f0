"""Functions bench/function_state.py calls: a no-op, and ones that touch ctx.state once."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import toolmesh


async def state_get(key: str, ctx: toolmesh.Context) -> Any:
    """One ctx.state.get."""
    return await ctx.state.get(key)


async def timed_channel(key: str, times: int, ctx: toolmesh.Context) -> dict[str, list[float]]:
    """Timed in the pod (ms), taking turns: `ctx.state.get(key)` and `ctx.invoke("noop")` (a no-op
    of another runtime), both through this pod's channel to the gateway."""
    spent: dict[str, list[float]] = {"get": [], "noop": []}
    for _ in range(times):
        started = time.perf_counter()
        await ctx.state.get(key)
        middle = time.perf_counter()
        await ctx.invoke("noop")
        spent["get"].append((middle - started) * 1000)
        spent["noop"].append((time.perf_counter() - middle) * 1000)
    return spent


async def seed(key: str, ctx: toolmesh.Context) -> None:
    await ctx.state.set(key, {"name": "bench", "items": list(range(10))})


async def incr_many(key: str, times: int, ctx: toolmesh.Context) -> int:
    """`times` concurrent ctx.state.incr of `key`; returns this pod's pid."""
    await asyncio.gather(*(ctx.state.incr(key) for _ in range(times)))
    return os.getpid()
