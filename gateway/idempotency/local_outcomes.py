"""Keyed calls' records in this process: for a Mesh built without a store (embedding, tests).
Gateways started by `toolmesh up` keep them in SQLite or Redis, shared with other replicas."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from toolmesh.gateway.idempotency.outcome_store import Claim, KeyedRecord, KeyState


@dataclass
class _Held:
    record: KeyedRecord
    until: float
    expires: float


class LocalOutcomes:
    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}

    async def claim(self, record: str, claim: Claim) -> KeyedRecord | None:
        now = time.time()
        if len(self._held) > 1024:
            self._held = {k: v for k, v in self._held.items() if v.expires > now}
        held = self._held.get(record)
        if held is None or held.expires <= now:
            running = KeyedRecord(claim.fingerprint, KeyState.RUNNING, claim.owner)
            self._held[record] = _Held(running, now + claim.lease, now + claim.ttl)
            return None
        lapsed = held.record.state is KeyState.RUNNING and held.until < now
        if lapsed and claim.take_lapsed and held.record.fingerprint == claim.fingerprint:
            held.record = replace(held.record, owner=claim.owner)
            held.until = now + claim.lease
            return None
        return replace(held.record, lapsed=lapsed)

    async def renew(self, record: str, owner: str, lease: float) -> bool:
        held = self._held.get(record)
        if held is None or held.record.owner != owner or held.record.state is not KeyState.RUNNING:
            return False
        held.until = time.time() + lease
        return True

    async def finish(self, record: str, owner: str, state: KeyState, outcome: bytes, ttl: float) -> None:
        held = self._held.get(record)
        if held is not None and held.record.owner == owner:
            held.record = replace(held.record, state=state, outcome=outcome)
            held.expires = time.time() + ttl

    async def release(self, record: str, owner: str) -> None:
        held = self._held.get(record)
        if held is not None and held.record.owner == owner and held.record.state is KeyState.RUNNING:
            del self._held[record]

    async def aclose(self) -> None:
        self._held.clear()
