"""How the clients retry a call: safely, because every call they retry carries an `Idempotency-Key`.

With `retries=N` (0 by default: no retries) each `invoke` sends an `Idempotency-Key` (the
caller's `idempotency_key`, else a new UUID) and sends the very same request again, at most N
more times, when it fails in a way that may pass: the gateway could not be reached or dropped
the connection (a replica dying behind a load balancer), or it answered a retryable error
(503 unavailable or overloaded, 429 rate limited, 409 idempotency_conflict while the first
attempt still runs). The gateway answers a repeat of a key from the outcome it stored, so a
function runs at most once however many attempts reach it, idempotent or not; and when a
replica died mid-call, a function that is not idempotent is not run again: the retry raises
`OutcomeUnknown` (never retried), an idempotent one simply runs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from toolmesh.errors import ToolmeshError

#: Seconds before the first retry, doubled for each next one up to RETRY_BACKOFF_MAX, unless the
#: gateway says how long to wait (Retry-After).
RETRY_BACKOFF = 0.2
RETRY_BACKOFF_MAX = 5.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    #: Attempts after the first.
    retries: int = 0
    backoff: float = RETRY_BACKOFF

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be 0 or more, got {self.retries}")

    def key(self, given: str | None) -> str | None:
        """The call's Idempotency-Key: the caller's, else one of its own when it may be retried."""
        if given:
            return given
        return str(uuid.uuid4()) if self.retries else None

    def pause(self, error: ToolmeshError, attempt: int) -> float | None:
        """Seconds to wait before attempt `attempt + 1` after `error`; None: raise it."""
        if attempt > self.retries or not error.retryable:
            return None
        if error.retry_after is not None:
            return min(error.retry_after, RETRY_BACKOFF_MAX)
        return min(self.backoff * 2.0 ** (attempt - 1), RETRY_BACKOFF_MAX)
