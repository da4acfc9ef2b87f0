"""Keyed calls' records in Redis (`[state] url`): every replica shares them.

    <prefix>idem:<sha256(caller, key)>   hash: fingerprint, state, owner, until (ms), outcome;
                                         expires `[gateway] idempotency_ttl` after the claim

Each step is one Lua script timed by Redis' own clock (TIME), so replicas whose clocks differ
still agree on whether a lease has passed, and two replicas cannot both claim a key.
"""

from __future__ import annotations

import math

import redis.asyncio as redis

from toolmesh.gateway.idempotency.outcome_store import Claim, KeyedRecord, KeyState
from toolmesh.gateway.state.redis_client import Outage

_NOW = "local t = redis.call('TIME')\nlocal now = t[1] * 1000 + math.floor(t[2] / 1000)\n"

#: KEYS[1] the record; ARGV fingerprint, owner, lease ms, ttl ms, take a lapsed claim ("1").
#: Returns false (claimed) or {fingerprint, state, owner, lapsed, outcome}.
CLAIM = (
    _NOW
    + """
local found = redis.call('HMGET', KEYS[1], 'fingerprint', 'state', 'owner', 'until', 'outcome')
if found[1] then
  local lapsed = found[2] == 'running' and tonumber(found[4]) < now
  if not (lapsed and ARGV[5] == '1' and found[1] == ARGV[1]) then
    return {found[1], found[2], found[3], lapsed and 1 or 0, found[5] or ''}
  end
end
redis.call('HSET', KEYS[1], 'fingerprint', ARGV[1], 'state', 'running', 'owner', ARGV[2],
  'until', now + tonumber(ARGV[3]), 'outcome', '')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return false
"""
)
#: KEYS[1]; ARGV owner, lease ms. Returns 1 when the running claim is still the owner's.
RENEW = (
    _NOW
    + """
local found = redis.call('HMGET', KEYS[1], 'owner', 'state')
if found[1] ~= ARGV[1] or found[2] ~= 'running' then
  return 0
end
redis.call('HSET', KEYS[1], 'until', now + tonumber(ARGV[2]))
return 1
"""
)
#: KEYS[1]; ARGV owner, state, outcome, ttl ms.
FINISH = """
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'state', ARGV[2], 'outcome', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return 0
"""
#: KEYS[1]; ARGV owner.
RELEASE = """
local found = redis.call('HMGET', KEYS[1], 'owner', 'state')
if found[1] == ARGV[1] and found[2] == 'running' then
  redis.call('DEL', KEYS[1])
end
return 0
"""


def _ms(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


class RedisOutcomes:
    def __init__(self, client: redis.Redis, prefix: str, outage: Outage) -> None:
        self._prefix = prefix
        self._outage = outage
        self._claim = client.register_script(CLAIM)
        self._renew = client.register_script(RENEW)
        self._finish = client.register_script(FINISH)
        self._release = client.register_script(RELEASE)

    def _key(self, record: str) -> str:
        return f"{self._prefix}idem:{record}"

    async def claim(self, record: str, claim: Claim) -> KeyedRecord | None:
        args: list[str | int] = [
            claim.fingerprint,
            claim.owner,
            _ms(claim.lease),
            _ms(claim.ttl),
            int(claim.take_lapsed),
        ]
        with self._outage.translated():
            found = await self._claim(keys=[self._key(record)], args=args)
        if not found:
            return None
        fingerprint, state, owner, lapsed, outcome = found
        return KeyedRecord(
            fingerprint.decode(), KeyState(state.decode()), owner.decode(), bool(int(lapsed)), bytes(outcome)
        )

    async def renew(self, record: str, owner: str, lease: float) -> bool:
        with self._outage.translated():
            return bool(await self._renew(keys=[self._key(record)], args=[owner, _ms(lease)]))

    async def finish(self, record: str, owner: str, state: KeyState, outcome: bytes, ttl: float) -> None:
        with self._outage.translated():
            await self._finish(keys=[self._key(record)], args=[owner, state.value, outcome, _ms(ttl)])

    async def release(self, record: str, owner: str) -> None:
        with self._outage.translated():
            await self._release(keys=[self._key(record)], args=[owner])

    async def aclose(self) -> None:
        """The client is the shared state's, closed with it."""
