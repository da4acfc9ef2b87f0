"""Free-text calls waiting for their confirmation, in Redis: any replica takes what another
planned (the seam is confirmations.py).

    <prefix>confirm:<token>    hash: principal, call (PendingCall as JSON); expires with the call

Taking is one Lua script, so two replicas handed the same token cannot both run the call.
"""

from __future__ import annotations

import math

import redis.asyncio as redis

from toolmesh.gateway.state.confirmations import (
    PendingCall,
    new_token,
    refused_for,
    unknown_confirmation,
)
from toolmesh.gateway.state.redis_client import Outage

#: KEYS[1] the pending call; ARGV[1] the principal taking it. Returns false (none), {0} (another
#: principal's: left in place) or {1, call}.
TAKE = """
local principal = redis.call('HGET', KEYS[1], 'principal')
if not principal then
  return false
end
if principal ~= ARGV[1] then
  return {0}
end
local call = redis.call('HGET', KEYS[1], 'call')
redis.call('DEL', KEYS[1])
return {1, call}
"""


class RedisConfirmations:
    def __init__(self, client: redis.Redis, prefix: str, outage: Outage) -> None:
        self._client = client
        self._prefix = prefix
        self._outage = outage
        self._take = client.register_script(TAKE)

    def _key(self, token: str) -> str:
        return f"{self._prefix}confirm:{token}"

    async def put(self, call: PendingCall, ttl: float) -> str:
        token = new_token()
        key = self._key(token)
        with self._outage.translated():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping={"principal": call.principal, "call": call.to_json()})
                pipe.pexpire(key, max(1, math.ceil(ttl * 1000)))
                await pipe.execute()
        return token

    async def take(self, token: str, principal: str) -> PendingCall:
        with self._outage.translated():
            found = await self._take(keys=[self._key(token)], args=[principal])
        if not found:
            raise unknown_confirmation()
        if int(found[0]) == 0:
            raise refused_for(principal)
        return PendingCall.from_json(found[1])
