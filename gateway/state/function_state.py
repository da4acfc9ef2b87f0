"""Functions' durable state (`ctx.state`), the transport-free core the Mesh.State rpc calls.

A pod sends one operation at a time over its channel to the gateway; the gateway knows the pod's
runtime from its token (core/auth.py), checks the operation against `[function_state]`'s limits
and runs it on the store, whose keys are namespaced by runtime:

    no [state] url    SqliteFunctionStore    the SQLite file of `[function_state] path`
    [state] url       RedisFunctionStore     Redis, under `<prefix>fstate:<runtime>:`

Every operation is atomic in the store, and every write gives the key a new version (from a
counter per runtime, never reused), which `set_if_version` compares: the SDK's `update` is a
read-modify-write retried on that compare-and-set.
"""

from __future__ import annotations

import json
import math
from typing import Protocol

from toolmesh.config import FunctionStateConfig
from toolmesh.errors import InvalidRequest, ResourceExhausted
from toolmesh.runtimes.functions.durable_state import StateAnswer, StateOp

#: Most keys one `keys()` answers: past it the caller is asked for a narrower prefix.
MAX_KEYS_LISTED = 10_000


class FunctionStore(Protocol):
    """Where the state lives. `ns` is the runtime; values are JSON text the service checked."""

    async def get(self, ns: str, key: str) -> tuple[bytes, int] | None:
        """The live value and its version, or None."""
        ...

    async def put(
        self, ns: str, key: str, value: bytes, ttl: float, expected: int | None, max_keys: int
    ) -> int:
        """Write (ttl 0: never expires) and return the new version; only while the version is
        `expected` when it is given (0: while the key is missing), returning 0 otherwise.
        TooManyKeys when a new key would pass `max_keys`."""
        ...

    async def incr(self, ns: str, key: str, by: int | float, max_keys: int) -> bytes:
        """Add `by` to the key's number (missing: 0), keeping its ttl; the new value as JSON.
        NotANumber when the key holds something else."""
        ...

    async def delete(self, ns: str, key: str) -> bool: ...

    async def keys(self, ns: str, prefix: str, limit: int) -> list[str]:
        """Up to `limit` live keys starting with `prefix`, sorted."""
        ...

    async def close(self) -> None: ...


class TooManyKeys(ResourceExhausted):
    """Raised by stores; the service words it."""


class NotANumber(InvalidRequest):
    """Raised by stores; the service words it."""


def _check_value(value: bytes, limit: int) -> None:
    if len(value) > limit:
        raise InvalidRequest(
            f"a ctx.state value may take {limit} bytes of JSON ([function_state] max_value_bytes); "
            f"this one takes {len(value)}",
            param="value",
        )
    try:
        json.loads(value, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequest("a ctx.state value must be UTF-8 JSON", param="value") from None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _number(value: bytes) -> int | float:
    try:
        number = json.loads(value, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError):
        number = None
    if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
        raise InvalidRequest("incr adds a JSON number", param="by")
    return number


class FunctionStateService:
    """Runs ctx.state operations for the pods of one gateway within `[function_state]`'s limits."""

    def __init__(self, store: FunctionStore, config: FunctionStateConfig) -> None:
        self.store = store
        self.config = config

    def _check_key(self, key: str) -> None:
        if not key:
            raise InvalidRequest("a ctx.state key must be a non-empty string", param="key")
        if len(key) > self.config.max_key_chars:
            raise InvalidRequest(
                f"a ctx.state key may have {self.config.max_key_chars} characters "
                f"([function_state] max_key_chars); {key[:40]!r}... has {len(key)}",
                param="key",
            )

    async def apply(self, runtime: str, op: StateOp) -> StateAnswer:
        """Run `op` on `runtime`'s keys."""
        if op.op == "keys":
            found = await self.store.keys(runtime, op.prefix, MAX_KEYS_LISTED + 1)
            if len(found) > MAX_KEYS_LISTED:
                raise InvalidRequest(
                    f"more than {MAX_KEYS_LISTED} keys start with {op.prefix!r}: ask for a longer prefix",
                    param="prefix",
                )
            return StateAnswer(keys=tuple(found))
        self._check_key(op.key)
        if op.op == "get":
            held = await self.store.get(runtime, op.key)
            return StateAnswer() if held is None else StateAnswer(True, held[0], held[1])
        if op.op == "delete":
            return StateAnswer(found=await self.store.delete(runtime, op.key))
        try:
            return await self._write(runtime, op)
        except TooManyKeys:
            raise ResourceExhausted(
                f"runtime {runtime!r} holds {self.config.max_keys} ctx.state keys, its most "
                f"([function_state] max_keys): delete some, or give them a ttl"
            ) from None
        except NotANumber:
            raise InvalidRequest(f"ctx.state key {op.key!r} holds something other than a number") from None

    async def _write(self, runtime: str, op: StateOp) -> StateAnswer:
        limit = self.config.max_keys
        if op.op == "incr":
            value = await self.store.incr(runtime, op.key, _number(op.value_json), limit)
            return StateAnswer(True, value)
        if not (math.isfinite(op.ttl) and op.ttl >= 0):
            raise InvalidRequest("ttl must be a positive number of seconds (0: never expires)", param="ttl")
        _check_value(op.value_json, self.config.max_value_bytes)
        if op.op == "set":
            version = await self.store.put(runtime, op.key, op.value_json, op.ttl, None, limit)
            return StateAnswer(True, version=version)
        if op.version < 0:
            raise InvalidRequest("version must be 0 or more", param="version")
        version = await self.store.put(runtime, op.key, op.value_json, op.ttl, op.version, limit)
        return StateAnswer(found=version > 0, version=version)
