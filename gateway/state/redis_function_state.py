"""Functions' durable state in Redis, shared by every gateway replica.

Under `<prefix>fstate:<runtime>:` a runtime has a hash per key (`k:<key>`: its JSON `v` and
version `n`, expiring with the key's ttl through Redis' own expiry), a sorted set of its keys
scored by when they expire (`#index`: counts keys for the limit and lists them) and its version
counter (`#version`). Each write is one Lua script, so it is atomic whatever else runs: concurrent
`incr`s from every pod of every gateway never lose an update. Time is Redis' own (`TIME`).
"""

from __future__ import annotations

import math

import redis.asyncio as redis

from toolmesh.gateway.state.function_state import NotANumber, TooManyKeys
from toolmesh.gateway.state.redis_client import Outage

#: Shared by the scripts: `now` in ms, and whether a new key fits under the limit (expired
#: keys leave the index first; their hashes Redis has expired itself).
_COMMON = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function room(index, most)
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now)
  return redis.call('ZCARD', index) < most
end
"""

#: KEYS value, index, version; ARGV key, value, ttl ms (0: none), expected version (-1: any),
#: max keys. Returns the new version, 0 when the expected version did not match, -2 when full.
PUT = (
    _COMMON
    + """
local held = redis.call('HGET', KEYS[1], 'n')
local expected = tonumber(ARGV[4])
if expected >= 0 and (tonumber(held) or 0) ~= expected then return 0 end
if not held and not room(KEYS[2], tonumber(ARGV[5])) then return -2 end
local version = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'n', version)
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
else
  redis.call('PERSIST', KEYS[1])
  redis.call('ZADD', KEYS[2], '+inf', ARGV[1])
end
return version
"""
)

#: KEYS value, index, version; ARGV key, the number to add, "1" when it is an integer, max keys.
#: Returns the new value as JSON text; -1 when the key holds no number, -2 when full.
INCR = (
    _COMMON
    + """
local held = redis.call('HGET', KEYS[1], 'v')
local number = 0
local integer = ARGV[3] == '1'
if held then
  number = tonumber(held)
  if number == nil or string.sub(held, 1, 1) == '"' then return -1 end
  if string.find(held, '[%.eE]') then integer = false end
elseif not room(KEYS[2], tonumber(ARGV[4])) then
  return -2
end
number = number + tonumber(ARGV[2])
if number ~= number or number == math.huge or number == -math.huge then return -1 end
local text
if integer and math.abs(number) < 9007199254740992 then
  text = string.format('%d', number)
else
  text = string.format('%.15g', number)
  if tonumber(text) ~= number then text = string.format('%.17g', number) end
end
local version = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], 'v', text, 'n', version)
if not held then redis.call('ZADD', KEYS[2], '+inf', ARGV[1]) end
return text
"""
)

#: KEYS value, index; ARGV key. Returns 1 when the key was there.
DELETE = """
local existed = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return existed
"""

#: KEYS index; ARGV prefix, limit. The live keys that start with the prefix, up to the limit.
KEYS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix, limit = ARGV[1], tonumber(ARGV[2])
local found = {}
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')) do
  if string.sub(key, 1, #prefix) == prefix then
    found[#found + 1] = key
    if #found >= limit then break end
  end
end
return found
"""


class RedisFunctionStore:
    """The `FunctionStore` of many gateways: Redis, under `<prefix>fstate:`."""

    def __init__(self, client: redis.Redis, prefix: str, outage: Outage) -> None:
        self._client = client
        self._prefix = f"{prefix}fstate:"
        self._outage = outage
        self._put = client.register_script(PUT)
        self._incr = client.register_script(INCR)
        self._delete = client.register_script(DELETE)
        self._keys = client.register_script(KEYS)

    def _names(self, ns: str, key: str) -> list[str]:
        base = f"{self._prefix}{ns}:"
        return [f"{base}k:{key}", f"{base}#index", f"{base}#version"]

    async def get(self, ns: str, key: str) -> tuple[bytes, int] | None:
        with self._outage.translated():
            value, version = await self._client.hmget(self._names(ns, key)[0], ["v", "n"])
        if value is None or version is None:
            return None
        return (value if isinstance(value, bytes) else value.encode()), int(version)

    async def put(
        self, ns: str, key: str, value: bytes, ttl: float, expected: int | None, max_keys: int
    ) -> int:
        ttl_ms = math.ceil(ttl * 1000) if ttl > 0 else 0
        args: list[str | bytes | int] = [key, value, ttl_ms, -1 if expected is None else expected, max_keys]
        with self._outage.translated():
            version = int(await self._put(keys=self._names(ns, key), args=args))
        if version == -2:
            raise TooManyKeys(ns)
        return version

    async def incr(self, ns: str, key: str, by: int | float, max_keys: int) -> bytes:
        args = [key, repr(by), "1" if isinstance(by, int) else "0", max_keys]
        with self._outage.translated():
            value = await self._incr(keys=self._names(ns, key), args=args)
        if value == -1:
            raise NotANumber(key)
        if value == -2:
            raise TooManyKeys(ns)
        return bytes(value)

    async def delete(self, ns: str, key: str) -> bool:
        with self._outage.translated():
            existed = await self._delete(keys=self._names(ns, key)[:2], args=[key])
        return bool(existed)

    async def keys(self, ns: str, prefix: str, limit: int) -> list[str]:
        with self._outage.translated():
            found = await self._keys(keys=[self._names(ns, "")[1]], args=[prefix, limit])
        return sorted(bytes(key).decode() for key in found)

    async def close(self) -> None:
        """The client is the shared state's, closed with it."""
