"""The rules of `Idempotency-Key` (IETF httpapi draft "The Idempotency-Key HTTP Header Field"):

- The first request with a key claims it, runs the call and records its outcome: the Result the
  function returned, success or error.
- A repeat with the same arguments answers that Result (`replayed`) and runs nothing; while the
  first still runs, the repeat waits for it up to its own timeout, then gets 409
  `idempotency_conflict` (retryable).
- The same key with another function or other arguments is 422 `idempotency_mismatch`.
- A key is the caller's own: another caller's same key is another call.
- Refusals that ran nothing (rate limited, overloaded, a pod that turned the call away, invalid
  arguments) are not recorded, so the caller can fix the request and send it again.
- When what ran the call stops mid-call (its replica dies and its lease lapses, its pod dies, the
  caller goes away), whether the function ran is unknown: for a function that is not idempotent
  every repeat then gets 409 `outcome_unknown` and nothing runs again; an idempotent one simply
  runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from toolmesh.errors import (
    ERROR_CLASSES,
    FunctionNotFound,
    FunctionTimeout,
    IdempotencyConflict,
    IdempotencyMismatch,
    InputRequired,
    InvalidRequest,
    OutcomeUnknown,
    Overloaded,
    PermissionDenied,
    RateLimited,
    ResourceExhausted,
    StateUnavailable,
    ToolmeshError,
    Unauthenticated,
    Unavailable,
)
from toolmesh.gateway.core.result_json import result_from_json, result_json
from toolmesh.gateway.idempotency.outcome_store import Claim, KeyedRecord, KeyState, OutcomeStore, record_id
from toolmesh.protocol.calls import REFUSED
from toolmesh.runtimes.functions.results import ErrorInfo, Result
from toolmesh.runtimes.functions.spec import FunctionSpec

if TYPE_CHECKING:
    from toolmesh.gateway.core.requests import InvokeRequest

log = logging.getLogger("toolmesh.gateway")

#: Raised on the way to a function, these ran nothing: the key is released.
NOT_RUN_ERRORS = (
    InvalidRequest,
    Unauthenticated,
    PermissionDenied,
    FunctionNotFound,
    RateLimited,
    Overloaded,
    StateUnavailable,
)
#: Error codes of results that say the function did not run (nothing to remember): those above,
#: their subclasses' (invalid_arguments...), and an ask: a function that asks its caller
#: (input_required) stopped at the question and runs again from the start with the answers (MCP's
#: rounds), under the same key.
NOT_RUN = frozenset(
    cls.code for cls in ERROR_CLASSES if issubclass(cls, NOT_RUN_ERRORS) or cls is InputRequired
)
#: How often a repeat looks whether the first call finished (seconds, first and most).
POLL_FIRST = 0.02
POLL_MOST = 0.25
#: The HTTP header (Stripe's) and gRPC metadata that mark a replayed outcome.
REPLAYED = {"Idempotent-Replayed": "true"}
REPLAYED_METADATA = (("idempotent-replayed", "true"),)


def fingerprint(function: str, arguments: bytes, feature: bool = False) -> str:
    """The call a key names: the function and its arguments, whatever their key order or spacing."""
    try:
        canonical = json.dumps(
            json.loads(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    except (ValueError, UnicodeDecodeError):
        canonical = arguments
    digest = hashlib.sha256(f"{int(feature)}:{function}\0".encode())
    digest.update(canonical)
    return digest.hexdigest()


def replica_name() -> str:
    """This gateway process, as the records and error messages name it."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def _ran_nothing(exc: BaseException) -> bool:
    if isinstance(exc, NOT_RUN_ERRORS):
        return True
    return isinstance(exc, Unavailable) and exc.details.get(REFUSED) is True


class KeyedCalls:
    """Runs the calls that carry an `Idempotency-Key`, by the rules above."""

    def __init__(self, store: OutcomeStore, ttl: float, lease: float, replica: str | None = None) -> None:
        self.store = store
        self.ttl = ttl
        self.lease = lease
        self.replica = replica or replica_name()

    async def run(
        self,
        scope: str,
        key: str,
        spec: FunctionSpec,
        request: InvokeRequest,
        wait: float,
        call: Callable[[], Awaitable[Result]],
    ) -> Result:
        """`call()` once for `scope`'s `key`, or the outcome of the time it already ran; a repeat
        waits up to `wait` seconds for a first call still running."""
        idempotent = spec.annotations.idempotent
        function, arguments, feature = spec.qualified_name, request.arguments, request.feature
        record = record_id(scope, key)
        claim = Claim(
            fingerprint(function, arguments, feature), self.replica, self.lease, self.ttl, idempotent
        )
        deadline = time.monotonic() + wait
        pause = POLL_FIRST
        while (found := await self.store.claim(record, claim)) is not None:
            answer = self._answer(found, claim, key)
            if answer is not None:
                return answer
            if time.monotonic() + pause > deadline:
                raise IdempotencyConflict(
                    f"the call with Idempotency-Key {key!r} is still running (on gateway {found.owner});"
                    " send the request again later to get its outcome",
                    param="Idempotency-Key",
                    retry_after=1.0,
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MOST)
        return await self._run_claimed(record, key, idempotent, call)

    def _answer(self, found: KeyedRecord, claim: Claim, key: str) -> Result | None:
        """The answer a repeat gets from the record, or None while its call is running."""
        if found.fingerprint != claim.fingerprint:
            raise IdempotencyMismatch(
                f"Idempotency-Key {key!r} was used for another call (another function or other"
                " arguments); use a new key for a new call",
                param="Idempotency-Key",
            )
        if found.state is KeyState.DONE:
            result = result_from_json(found.outcome)
            result.replayed = True
            return result
        if found.state is KeyState.UNKNOWN or found.lapsed:
            why = found.outcome.decode() if found.outcome else f"gateway {found.owner} stopped mid-call"
            raise OutcomeUnknown(
                f"the call with Idempotency-Key {key!r} started, but {why}, so whether the function ran"
                " is unknown; it is not idempotent, so it is not run again under this key. Check its"
                " effects, and if it did not run, call it again with a new key",
                param="Idempotency-Key",
            )
        return None

    async def _run_claimed(
        self, record: str, key: str, idempotent: bool, call: Callable[[], Awaitable[Result]]
    ) -> Result:
        heartbeat = asyncio.create_task(self._renew(record))
        try:
            result = await call()
        except BaseException as exc:
            heartbeat.cancel()
            await asyncio.shield(self._settle_failure(record, key, idempotent, exc))
            raise
        heartbeat.cancel()
        try:
            if result.error is not None and result.error.code in NOT_RUN:
                await self.store.release(record, self.replica)
            else:
                await self.store.finish(record, self.replica, KeyState.DONE, result_json(result), self.ttl)
        except ToolmeshError as failure:
            # The call ran: its caller gets the outcome; repeats will hear it is unknown.
            log.warning(f"could not record the outcome of Idempotency-Key {key!r}: {failure.message}")
        return result

    async def _settle_failure(self, record: str, key: str, idempotent: bool, exc: BaseException) -> None:
        """A call that raised: free the key when nothing ran (or running again is harmless), keep
        a timeout or a broken limit as the outcome, and say "unknown" for the rest."""
        try:
            if idempotent or _ran_nothing(exc):
                await self.store.release(record, self.replica)
            elif isinstance(exc, FunctionTimeout | ResourceExhausted):
                outcome = result_json(Result.failure(ErrorInfo.from_exception(exc)))
                await self.store.finish(record, self.replica, KeyState.DONE, outcome, self.ttl)
            else:
                what = exc.message if isinstance(exc, ToolmeshError) else "the call was cancelled"
                why = f"gateway {self.replica} lost it mid-call ({what})"
                await self.store.finish(record, self.replica, KeyState.UNKNOWN, why.encode(), self.ttl)
        except ToolmeshError as failure:
            # The store is away: the record's lease lapses and repeats say "unknown", never rerun.
            log.warning(f"could not record the outcome of Idempotency-Key {key!r}: {failure.message}")

    async def _renew(self, record: str) -> None:
        """Keep the claim alive while the call runs; a replica that dies stops renewing it."""
        while True:
            await asyncio.sleep(self.lease / 3)
            with contextlib.suppress(ToolmeshError):
                if not await self.store.renew(record, self.replica, self.lease):
                    return
