"""The seam between the rules of keyed calls (gateway/core/keyed_calls.py) and where their records live.

A record per (caller, key):

    fingerprint   the function and its canonical arguments, hashed: a repeat must match it
    state         running (with its owner, a replica, and the lease it renews), done (with the
                  outcome) or unknown (its runner saw the call fail in a way that may have run it)
    expires       `[gateway] idempotency_ttl` after the claim; then the key is free again

Every store decides a claim atomically (a Lua script, a SQLite transaction, one event loop), so
two replicas handed the same key at once cannot both run the call.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Protocol


class KeyState(enum.Enum):
    RUNNING = "running"
    DONE = "done"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    """What a store holds for a key another claim found there."""

    fingerprint: str
    state: KeyState
    #: The replica that claimed it (running) or ran it.
    owner: str
    #: Running, but its owner let the lease pass: the owner is gone.
    lapsed: bool = False
    #: Done: the Result as its JSON document (result_json); unknown: why, as text.
    outcome: bytes = b""


@dataclass(frozen=True, slots=True)
class Claim:
    """A replica's bid to run the call of a key."""

    fingerprint: str
    owner: str
    #: Seconds the claim holds without renewal.
    lease: float
    #: Seconds the record is kept.
    ttl: float
    #: Take over a running record whose owner is gone (for an idempotent function).
    take_lapsed: bool = False


def record_id(scope: str, key: str) -> str:
    """One id for a caller's key, of fixed length whatever the key holds."""
    return hashlib.sha256(f"{scope}\0{key}".encode()).hexdigest()


class OutcomeStore(Protocol):
    async def claim(self, record: str, claim: Claim) -> KeyedRecord | None:
        """Claim the key for `claim.owner` (None), or answer the record already there."""
        ...

    async def renew(self, record: str, owner: str, lease: float) -> bool:
        """Extend a running claim of `owner`; False when it is no longer `owner`'s."""
        ...

    async def finish(self, record: str, owner: str, state: KeyState, outcome: bytes, ttl: float) -> None:
        """Record the outcome of `owner`'s claim (unless another replica took the key over)."""
        ...

    async def release(self, record: str, owner: str) -> None:
        """Forget `owner`'s claim: its call ran nothing, so the key is free for a retry."""
        ...

    async def aclose(self) -> None: ...
