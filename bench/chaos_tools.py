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
