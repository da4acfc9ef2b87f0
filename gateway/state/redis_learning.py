"""What the router learns at run time, in Redis: learned examples and recent routings, shared by
every gateway replica.

Learned examples (the `ExampleStore` of router/learning.py, same bounds as its SQLite one):

    <prefix>learned:<version>:<function>      sorted set: prompt -> when it was last confirmed
    <prefix>learned-by:<version>:<function>   hash: prompt -> the principal who taught it
    <prefix>learned-versions:<function>       set of the versions holding prompts
    <prefix>learned-functions                 set of the functions holding prompts

Adding and removing are Lua scripts, so two replicas learning at once keep the bound, on Redis'
own clock. Each change is published on the state feed's channel as ``learned:<function>``
(redis_feed.py): every replica then reads that function's prompts again, so what one replica
learns (or `toolmesh router examples remove` forgets) reaches every replica's routing at once.

Recent routings (`Routings`): `<prefix>routing:<id>` holds the prompt and, when the routing
matched a function, `<prefix>routing-match:<id>` its name, both for ROUTING_TTL seconds, so
feedback may go to another replica than the one that routed. (Two keys, not one value: a
routing remembered before matches were kept reads as one without a match, and a replica that
knows only the prompt key still reads the prompt.) Remembering does not make the routing wait:
it is sent to Redis behind the answer.

The scripts build key names from their arguments, so this store wants one Redis server (or a
cluster with all of toolmesh's keys in one slot), as the jobs' scripts do.
"""

from __future__ import annotations

from collections.abc import Mapping

import redis.asyncio as redis

from toolmesh.gateway.state.loop_calls import LoopCalls
from toolmesh.gateway.state.redis_client import Outage
from toolmesh.gateway.state.redis_feed import LEARNED_PREFIX, feed_channel
from toolmesh.router.learning import MAX_LEARNED, LearnedExample, Routed, learnable

#: Seconds a routing's prompt stays in Redis for feedback to refer to.
ROUTING_TTL = 900

#: KEYS zset, principals, versions, functions; ARGV prompt, principal, max, version, function,
#: channel, message. Returns the version's prompts, newest first.
ADD = """
local now = redis.call('TIME')
local at = string.format('%.17g', tonumber(now[1]) + tonumber(now[2]) / 1000000)
redis.call('ZADD', KEYS[1], at, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local extra = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if extra > 0 then
  local old = redis.call('ZRANGE', KEYS[1], 0, extra - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, extra - 1)
  redis.call('HDEL', KEYS[2], unpack(old))
end
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return redis.call('ZREVRANGE', KEYS[1], 0, -1)
"""

#: KEYS versions, functions; ARGV prefix, function, prompt, whole ('1': every prompt), channel,
#: message. Returns how many prompts were removed.
REMOVE = """
local removed = 0
for _, version in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local prompts = ARGV[1] .. 'learned:' .. version .. ':' .. ARGV[2]
  local by = ARGV[1] .. 'learned-by:' .. version .. ':' .. ARGV[2]
  if ARGV[4] == '1' then
    removed = removed + redis.call('ZCARD', prompts)
    redis.call('DEL', prompts, by)
  else
    removed = removed + redis.call('ZREM', prompts, ARGV[3])
    redis.call('HDEL', by, ARGV[3])
  end
  if redis.call('EXISTS', prompts) == 0 then
    redis.call('SREM', KEYS[1], version)
  end
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[2])
end
if removed > 0 then
  redis.call('PUBLISH', ARGV[5], ARGV[6])
end
return removed
"""


class RedisExamples:
    """`ExampleStore` in Redis. The router calls the plain methods from its worker threads
    (through `calls`); `toolmesh router examples` calls the `a`-prefixed ones directly."""

    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        outage: Outage,
        calls: LoopCalls | None = None,
        max_per_function: int = MAX_LEARNED,
    ) -> None:
        self.max_per_function = max_per_function
        self._client = client
        self._prefix = prefix
        self._outage = outage
        self._calls = calls
        self._channel = feed_channel(prefix)
        self._add = client.register_script(ADD)
        self._remove = client.register_script(REMOVE)

    def _prompts(self, version: str, function: str) -> str:
        return f"{self._prefix}learned:{version}:{function}"

    def _by(self, version: str, function: str) -> str:
        return f"{self._prefix}learned-by:{version}:{function}"

    def _versions(self, function: str) -> str:
        return f"{self._prefix}learned-versions:{function}"

    @property
    def _functions(self) -> str:
        return f"{self._prefix}learned-functions"

    def _changed(self, function: str) -> bytes:
        return LEARNED_PREFIX + function.encode()

    # -- on the event loop --------------------------------------------------------------------

    async def aadd(self, function: str, version: str, prompt: str, principal: str) -> list[str]:
        keys = [self._prompts(version, function), self._by(version, function)]
        keys += [self._versions(function), self._functions]
        args: list[str | bytes | int] = [learnable(prompt), principal, self.max_per_function, version]
        args += [function, self._channel, self._changed(function)]
        with self._outage.translated():
            rows = await self._add(keys=keys, args=args)
        return [row.decode() for row in rows]

    async def acurrent(self, versions: Mapping[str, str]) -> dict[str, list[str]]:
        functions = list(versions)
        with self._outage.translated():
            async with self._client.pipeline(transaction=False) as pipe:
                for function in functions:
                    pipe.zrevrange(self._prompts(versions[function], function), 0, -1)
                rows = await pipe.execute()
        found = zip(functions, rows, strict=True)
        return {function: [p.decode() for p in prompts] for function, prompts in found if prompts}

    async def alisting(self, function: str | None = None) -> list[LearnedExample]:
        with self._outage.translated():
            if function is None:
                members = await self._client.smembers(self._functions)
                functions = sorted(f.decode() if isinstance(f, bytes) else f for f in members)
            else:
                functions = [function]
            async with self._client.pipeline(transaction=False) as pipe:
                for name in functions:
                    pipe.smembers(self._versions(name))
                versions = await pipe.execute()
            pairs = [(f, v.decode()) for f, vs in zip(functions, versions, strict=True) for v in vs]
            async with self._client.pipeline(transaction=False) as pipe:
                for name, version in pairs:
                    pipe.zrevrange(self._prompts(version, name), 0, -1, withscores=True)
                    pipe.hgetall(self._by(version, name))
                found = await pipe.execute()
        rows = []
        for (name, version), prompts, by in zip(pairs, found[::2], found[1::2], strict=True):
            for prompt, at in prompts:
                principal = by.get(prompt, b"").decode()
                rows.append(LearnedExample(name, version, prompt.decode(), principal, float(at)))
        rows.sort(key=lambda row: (row.function, -row.at))
        return rows

    async def aremove(self, function: str, prompt: str | None = None) -> int:
        keys = [self._versions(function), self._functions]
        whole = "1" if prompt is None else "0"
        args: list[str | bytes] = [self._prefix, function, prompt or "", whole, self._channel]
        args.append(self._changed(function))
        with self._outage.translated():
            return int(await self._remove(keys=keys, args=args))

    # -- from the router's worker threads -----------------------------------------------------

    def _run_calls(self) -> LoopCalls:
        if self._calls is None:
            raise RuntimeError("this RedisExamples has no event loop to send its commands through")
        return self._calls

    def add(self, function: str, version: str, prompt: str, principal: str) -> list[str]:
        return self._run_calls().run(self.aadd(function, version, prompt, principal))

    def current(self, versions: Mapping[str, str]) -> dict[str, list[str]]:
        return self._run_calls().run(self.acurrent(versions))

    def listing(self, function: str | None = None) -> list[LearnedExample]:
        return self._run_calls().run(self.alisting(function))

    def remove(self, function: str, prompt: str | None = None) -> int:
        return self._run_calls().run(self.aremove(function, prompt))

    def changed(self) -> list[str]:
        """Nothing to look for: the state feed announces each change (gateway/server.py)."""
        return []

    def close(self) -> None:
        """The client is the gateway's (shared_state.py closes it)."""


class RedisRoutings:
    """`Routings` in Redis: any replica can take feedback on any replica's routing."""

    def __init__(self, client: redis.Redis, prefix: str, calls: LoopCalls, ttl: int = ROUTING_TTL) -> None:
        self._client = client
        self._prompts = f"{prefix}routing:"
        self._matches = f"{prefix}routing-match:"
        self._calls = calls
        self._ttl = ttl

    def remember(self, routing_id: str, prompt: str, match: str | None = None) -> None:
        work = self._remember(routing_id, learnable(prompt), match)
        self._calls.start(work, "a routing not remembered for feedback")

    async def _remember(self, routing_id: str, prompt: str, match: str | None) -> None:
        with self._calls.outage.translated():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(self._prompts + routing_id, prompt, ex=self._ttl)
                if match is not None:
                    pipe.set(self._matches + routing_id, match, ex=self._ttl)
                await pipe.execute()

    def recall(self, routing_id: str) -> Routed | None:
        return self._calls.run(self._recall(routing_id))

    async def _recall(self, routing_id: str) -> Routed | None:
        with self._calls.outage.translated():
            prompt, match = await self._client.mget([self._prompts + routing_id, self._matches + routing_id])
        if prompt is None:
            return None
        return Routed(_text(prompt), None if match is None else _text(match))


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
