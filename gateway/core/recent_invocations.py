"""The gateway's last few calls, in memory, for people watching (the console's live view).

A bounded ring: the newest `CAPACITY` calls that reached a function of the catalog (the same
calls `metrics.py` counts), each with when it started, its request id, function, outcome,
duration and who made it. Nothing is kept on disk or shared between replicas: each gateway
shows its own calls, like its own /metrics.

Who sees what: a key sees the calls it made itself (of functions it may call); a key with the
`@admin` scope, the open gateway and the mesh's own pods see every call.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from toolmesh.gateway.core.auth import ADMIN, Principal

#: Calls kept per gateway; the oldest drops out when a new one ends.
CAPACITY = 200
#: How many `latest` answers when not asked.
DEFAULT_LIMIT = 50


@dataclass(frozen=True, slots=True)
class InvocationRecord:
    """One finished call. `outcome` is ok, error, invalid_arguments, timeout or the code of the
    error that stopped it (as the `outcome` label of the call metrics)."""

    started: float  # Unix time
    request_id: str
    function: str
    outcome: str
    duration_ms: float
    principal: str

    def to_dict(self) -> dict[str, object]:
        return {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.started))
            + f".{int(self.started * 1000) % 1000:03d}Z",
            "request_id": self.request_id,
            "function": self.function,
            "outcome": self.outcome,
            "duration_ms": round(self.duration_ms, 3),
            "principal": self.principal,
        }


class RecentInvocations:
    """The ring. Appended to from the event loop only (Mesh.invoke/stream), so no lock."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._calls: deque[InvocationRecord] = deque(maxlen=capacity)

    @property
    def capacity(self) -> int:
        return self._calls.maxlen or 0

    def record(
        self, principal: Principal, request_id: str, function: str, outcome: str, seconds: float
    ) -> None:
        started = time.time() - seconds
        self._calls.append(
            InvocationRecord(started, request_id, function, outcome, seconds * 1000, principal.name)
        )

    def latest(self, principal: Principal, limit: int = DEFAULT_LIMIT) -> list[InvocationRecord]:
        """The newest `limit` calls `principal` may see, newest first."""
        everything = principal.may(ADMIN)
        found: list[InvocationRecord] = []
        for call in reversed(self._calls):
            if len(found) >= limit:
                break
            if everything or (call.principal == principal.name and principal.allows(call.function)):
                found.append(call)
        return found
