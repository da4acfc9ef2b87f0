"""Router sessions in Redis, so a session started through one gateway replica continues
through another.

One list per session, `<prefix>session:<id>`, of JSON turns: a turn is appended, the list cut
to the last `max_turns`, and its TTL set to `ttl` again, in one transaction; Redis drops the
whole session `ttl` seconds after its last turn, like the SQLite store. `max_sessions` does not
apply here: the TTL bounds them, and Redis' own `maxmemory` policy is the backstop.

The router calls its store from its worker threads (like SQLite, off the event loop): each
command goes through the gateway's event loop (`loop_calls.py`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import redis.asyncio as redis

from toolmesh.gateway.state.loop_calls import LoopCalls
from toolmesh.gateway.state.redis_client import Outage
from toolmesh.router.sessions import Turn, trimmed_result


class RedisSessions:
    def __init__(
        self,
        client: redis.Redis,
        loop: asyncio.AbstractEventLoop,
        prefix: str,
        outage: Outage,
        *,
        ttl: float,
        max_turns: int,
        timeout: float,
    ) -> None:
        self.ttl = ttl
        self.max_turns = max_turns
        self._client = client
        self._prefix = f"{prefix}session:"
        self._outage = outage
        self._run = LoopCalls(loop, outage, timeout).run

    def history(self, session_id: str, limit: int | None = None) -> list[Turn]:
        return self._run(self._history(session_id, limit or self.max_turns))

    async def _history(self, session_id: str, limit: int) -> list[Turn]:
        with self._outage.translated():
            rows = await self._client.lrange(self._prefix + session_id, -limit, -1)
        turns = []
        for row in rows:
            turn = json.loads(row)
            turns.append(
                Turn(turn["prompt"], turn["function"], turn["arguments"], turn["result"], turn["at"])
            )
        return turns

    def record(
        self, session_id: str, prompt: str, function: str | None, arguments: Mapping[str, Any], result: Any
    ) -> None:
        turn = {
            "prompt": prompt,
            "function": function,
            "arguments": json.loads(json.dumps(dict(arguments), default=str)),
            "result": json.loads(trimmed_result(result)),
            "at": time.time(),
        }
        self._run(self._record(session_id, json.dumps(turn)))

    async def _record(self, session_id: str, turn: str) -> None:
        key = self._prefix + session_id
        with self._outage.translated():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(key, turn)
                pipe.ltrim(key, -self.max_turns, -1)
                pipe.pexpire(key, max(1, round(self.ttl * 1000)))
                await pipe.execute()

    def close(self) -> None:
        """The client is the gateway's (shared_state.py closes it)."""
