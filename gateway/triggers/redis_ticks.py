"""`TriggerTicks` in Redis, for gateways on many machines sharing `[state] url`.

<p>triggers:<project>:tick:<name>:<ms>   "1", SET NX, expires after TICK_MEMORY
<p>triggers:<project>:paused            hash name -> "1" paused / "0" resumed
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as redis

from toolmesh.gateway.state.redis_client import Outage
from toolmesh.gateway.triggers.ticks import TICK_MEMORY


class RedisTicks:
    def __init__(self, client: redis.Redis, prefix: str, outage: Outage, project: str) -> None:
        self.client = client
        self.outage = outage
        self.prefix = f"{prefix}triggers:{project}:"

    async def open(self) -> None:
        """The client is the gateway's (shared.py opens and closes it)."""

    async def close(self) -> None:
        pass

    async def claim(self, trigger: str, tick: int) -> bool:
        with self.outage.translated():
            done: Any = await self.client.set(
                f"{self.prefix}tick:{trigger}:{tick}", b"1", nx=True, ex=int(TICK_MEMORY)
            )
        return bool(done)

    async def paused(self, trigger: str) -> bool | None:
        with self.outage.translated():
            value: Any = await self.client.hget(self.prefix + "paused", trigger)
        return None if value is None else value == b"1"

    async def set_paused(self, trigger: str, paused: bool) -> None:
        with self.outage.translated():
            await self.client.hset(self.prefix + "paused", trigger, b"1" if paused else b"0")
