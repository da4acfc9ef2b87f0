"""`ctx.state`: a function's durable key-value state, kept by the gateway, not by the pod.

Module globals live in one pod: they are gone when the pod scales to zero, crashes or is
replaced, and each of a runtime's pods has its own. `ctx.state` keeps JSON values in the
gateway's state store (a SQLite file, or Redis with `[state] url`) that every pod of the runtime
reaches over its channel to the gateway, so they survive all of that and every pod sees the same
data::

    @toolmesh.function
    async def count_visit(page: str, ctx: toolmesh.Context) -> int:
        return await ctx.state.incr(f"visits:{page}")

Keys belong to the runtime (its name is their namespace: two runtimes never see each other's
keys). Each operation is atomic in the store; `update` is a read-modify-write retried on a
versioned compare-and-set (`get_versioned` + `set_if_version`), so concurrent calls in many pods
never lose an update. Sync functions use the `_sync` twins (they run in worker threads).

Errors: `InvalidRequest` for a value that is not JSON, too large or a bad key; `ResourceExhausted`
when the runtime holds its most keys; `StateUnavailable` when the store cannot be reached.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from toolmesh.errors import InvalidRequest, ResourceExhausted

T = TypeVar("T")

Operation = Literal["get", "set", "incr", "delete", "set_if_version", "keys"]

#: Attempts `update` makes before it gives up on a key that every other writer keeps changing.
UPDATE_ATTEMPTS = 200


@dataclass(frozen=True, slots=True)
class StateOp:
    """One operation, as it travels to the gateway (see StateRequest in mesh.proto)."""

    op: Operation
    key: str = ""
    #: set and set_if_version: the value as JSON; incr: the number to add, as JSON.
    value_json: bytes = b""
    #: Seconds until the key expires; 0: never.
    ttl: float = 0.0
    #: set_if_version: the version the key must still have (0: must not exist).
    version: int = 0
    #: keys: the prefix.
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class StateAnswer:
    """What the gateway answers (see StateResponse in mesh.proto)."""

    found: bool = False
    value_json: bytes = b""
    version: int = 0
    keys: tuple[str, ...] = ()


class StateChannel(Protocol):
    """Whatever carries operations to the state's keeper: the pod's channel to the gateway."""

    async def state(self, op: StateOp) -> StateAnswer: ...


def to_json(value: Any, what: str = "value") -> bytes:
    """`value` as compact JSON, or InvalidRequest saying why it cannot be stored."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"ctx.state keeps JSON values only; this {what} is not: {exc}") from None


def _ttl(ttl: float | None) -> float:
    if ttl is None:
        return 0.0
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0 or ttl == float("inf"):
        raise InvalidRequest(f"ttl must be a positive number of seconds or None, not {ttl!r}", param="ttl")
    return float(ttl)


def _key(key: str) -> str:
    if not isinstance(key, str):
        raise InvalidRequest(f"a ctx.state key is a string, not {type(key).__name__}", param="key")
    return key


class DurableState:
    """The `ctx.state` of a call: async methods, and `_sync` twins for sync functions."""

    __slots__ = ("_channel", "_loop")

    def __init__(self, channel: StateChannel | None, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._channel = channel
        self._loop = loop

    async def _send(self, op: StateOp) -> StateAnswer:
        if self._channel is None:
            raise RuntimeError("ctx.state needs a gateway: this pod is not part of a mesh")
        return await self._channel.state(op)

    def _wait(self, work: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            work.close()
            raise RuntimeError("the _sync methods of ctx.state are only available inside a running call")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    async def get(self, key: str, default: Any = None) -> Any:
        """The key's value, or `default` when it is missing or expired."""
        answer = await self._send(StateOp("get", _key(key)))
        return json.loads(answer.value_json) if answer.found else default

    async def get_versioned(self, key: str) -> tuple[Any, int]:
        """The key's value and its version; ``(None, 0)`` when it is missing. Pass the version to
        `set_if_version` to write only if nobody wrote in between."""
        answer = await self._send(StateOp("get", _key(key)))
        return (json.loads(answer.value_json), answer.version) if answer.found else (None, 0)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store `value` (JSON) under `key`; with `ttl`, it expires after that many seconds."""
        await self._send(StateOp("set", _key(key), to_json(value), _ttl(ttl)))

    async def set_if_version(self, key: str, value: Any, version: int, *, ttl: float | None = None) -> bool:
        """Store `value` only while the key's version is still `version` (0: only while it does
        not exist); returns whether it did."""
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise InvalidRequest(f"version must be a version from get_versioned, not {version!r}")
        op = StateOp("set_if_version", _key(key), to_json(value), _ttl(ttl), version)
        return (await self._send(op)).found

    async def incr(self, key: str, by: int | float = 1) -> int | float:
        """Add `by` to the key's number (a missing key counts as 0) and return the new number;
        atomic, however many pods add at once. The key keeps its ttl."""
        if isinstance(by, bool) or not isinstance(by, int | float):
            raise InvalidRequest(f"incr adds a number, not {type(by).__name__}", param="by")
        answer = await self._send(StateOp("incr", _key(key), to_json(by, "number")))
        number: int | float = json.loads(answer.value_json)
        return number

    async def delete(self, key: str) -> bool:
        """Remove the key; returns whether it was there."""
        return (await self._send(StateOp("delete", _key(key)))).found

    async def keys(self, prefix: str = "") -> list[str]:
        """The runtime's live keys that start with `prefix`, sorted."""
        if not isinstance(prefix, str):
            raise InvalidRequest("prefix must be a string", param="prefix")
        return list((await self._send(StateOp("keys", prefix=prefix))).keys)

    async def update(
        self, key: str, fn: Callable[[Any], Any], default: Any = None, *, ttl: float | None = None
    ) -> Any:
        """Replace the key's value with ``fn(value)`` (`default` when missing) atomically and
        return the new value. `fn` may run more than once (when another writer got in first),
        so it must only compute. From an async function `fn` may also be async."""
        for attempt in range(UPDATE_ATTEMPTS):
            current, version = await self.get_versioned(key)
            new = fn(default if version == 0 else current)
            if isinstance(new, Awaitable):
                new = await new
            if await self.set_if_version(key, new, version, ttl=ttl):
                return new
            # Spread the retries of writers that collided, so that they stop colliding.
            await asyncio.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
        raise ResourceExhausted(
            f"ctx.state.update({key!r}) lost the race to other writers {UPDATE_ATTEMPTS} times; try again"
        )

    # -- for sync functions, which run in worker threads ------------------------------------------

    def get_sync(self, key: str, default: Any = None) -> Any:
        return self._wait(self.get(key, default))

    def get_versioned_sync(self, key: str) -> tuple[Any, int]:
        return self._wait(self.get_versioned(key))

    def set_sync(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        self._wait(self.set(key, value, ttl=ttl))

    def set_if_version_sync(self, key: str, value: Any, version: int, *, ttl: float | None = None) -> bool:
        return self._wait(self.set_if_version(key, value, version, ttl=ttl))

    def incr_sync(self, key: str, by: int | float = 1) -> int | float:
        return self._wait(self.incr(key, by))

    def delete_sync(self, key: str) -> bool:
        return self._wait(self.delete(key))

    def keys_sync(self, prefix: str = "") -> list[str]:
        return self._wait(self.keys(prefix))

    def update_sync(
        self, key: str, fn: Callable[[Any], Any], default: Any = None, *, ttl: float | None = None
    ) -> Any:
        """`update` for sync functions: `fn` runs in the calling thread, between the read and
        the compare-and-set."""
        for attempt in range(UPDATE_ATTEMPTS):
            current, version = self.get_versioned_sync(key)
            new = fn(default if version == 0 else current)
            if self.set_if_version_sync(key, new, version, ttl=ttl):
                return new
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
        raise ResourceExhausted(
            f"ctx.state.update({key!r}) lost the race to other writers {UPDATE_ATTEMPTS} times; try again"
        )
