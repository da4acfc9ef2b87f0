"""Rate limits in Redis: one token bucket per key, shared by every gateway replica.

The bucket is refilled and taken from in one Lua script, so two replicas taking at once
cannot both spend the last token, and time is Redis' own (`TIME`), so the replicas' clocks
need not agree. The arithmetic is the local bucket's (limits.py): `burst` tokens, refilled at
`rate` a second, the wait until the next token when none is left. A bucket untouched long
enough to be full again expires, so idle keys cost no memory.
"""

from __future__ import annotations

import redis.asyncio as redis

from toolmesh.gateway.state.limits import Bucket
from toolmesh.gateway.state.redis_client import Outage

#: KEYS[1] the bucket; ARGV rate, burst. Returns the wait as a string (Lua numbers would be
#: cut to integers on the way out).
TAKE = """
local now = redis.call('TIME')
now = tonumber(now[1]) + tonumber(now[2]) / 1000000
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1])
local at = tonumber(held[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return string.format('%.17g', wait)
"""


class RedisBucket:
    def __init__(self, limits: RedisLimits, key: str, rate: float, burst: int) -> None:
        self._limits = limits
        self._key = key
        self._args = (repr(float(rate)), str(burst))

    async def take(self) -> float:
        limits = self._limits
        with limits.outage.translated():
            # EVALSHA, falling back to EVAL once when Redis has not seen the script (restarted).
            wait = await limits.script(keys=[self._key], args=self._args)
        return float(wait)


class RedisLimits:
    """Buckets under `<prefix>ratelimit:<key name>`."""

    def __init__(self, client: redis.Redis, prefix: str, outage: Outage) -> None:
        self.outage = outage
        self.script = client.register_script(TAKE)
        self._prefix = f"{prefix}ratelimit:"

    def bucket(self, name: str, rate: float, burst: int) -> Bucket:
        return RedisBucket(self, self._prefix + name, rate, burst)
