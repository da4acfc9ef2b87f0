"""`TriggerTicks` in Redis, for gateways on many machines sharing `[state] url`.

<p>triggers:<project>:tick:<name>:<ms>   "1", SET NX, expires after TICK_MEMORY
<p>triggers:<project>:paused            hash name -> "1" paused / "0" resumed
<p>triggers:<project>:lease:<name>      the holder's id, expires unless renewed
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as redis

from toolmesh.gateway.state.redis_client import Outage
from toolmesh.gateway.triggers.ticks import TICK_MEMORY

#: Renew the lease when it is the caller's, else take it if nobody has it: 1 when the caller has it.
_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisTicks:
    def __init__(self, client: redis.Redis, prefix: str, outage: Outage, project: str) -> None:
        self.client = client
        self.outage = outage
        self.prefix = f"{prefix}triggers:{project}:"

    async def open(self) -> None:
        """The client is the gateway's (shared_state.py opens and closes it)."""

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

    async def lease(self, trigger: str, holder: str, seconds: float) -> bool:
        with self.outage.translated():
            held: Any = await self.client.eval(
                _LEASE, 1, f"{self.prefix}lease:{trigger}", holder, str(max(1, round(seconds * 1000)))
            )
        return bool(held)

    async def release(self, trigger: str, holder: str) -> None:
        with self.outage.translated():
            await self.client.eval(_RELEASE, 1, f"{self.prefix}lease:{trigger}", holder)
