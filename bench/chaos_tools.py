"""Functions bench/chaos.py calls while it kills pods: each takes ~1-5 ms of real time."""

from __future__ import annotations

import asyncio
import random

import toolmesh

#: Memory the greedy function holds on to across calls, so it grows without bound.
_HOARD: list[bytes] = []


@toolmesh.function(idempotent=True)
async def lookup(key: str) -> dict[str, str]:
    """Read-only and safe to repeat: the gateway may retry it on another pod."""
    await asyncio.sleep(random.uniform(0.001, 0.005))
    return {"key": key, "value": key[::-1]}


@toolmesh.function
async def append(item: str) -> dict[str, str]:
    """Stands for a call with effects: not idempotent, so never retried behind the caller's back."""
    await asyncio.sleep(random.uniform(0.001, 0.005))
    return {"appended": item}


@toolmesh.function
def hoard(megabytes: int = 64) -> int:
    """Allocate and keep `megabytes` more on every call (the memory scenario's greedy function)."""
    _HOARD.append(b"\x01" * (megabytes * 1024 * 1024))
    return sum(len(chunk) for chunk in _HOARD) // (1024 * 1024)


async def blocker(seconds: float = 5.0) -> int:
    """Blocks its pod's event loop (a sync sleep in an async function): bench/blocked_loop.py."""
    import os
    import time

    time.sleep(seconds)  # noqa: ASYNC251 - blocking the loop is the point
    return os.getpid()


@toolmesh.function(timeout=2)
async def overrun(seconds: float = 5.0) -> int:
    """Blocks its pod's event loop past its own 2 s limit."""
    return await blocker(seconds)
