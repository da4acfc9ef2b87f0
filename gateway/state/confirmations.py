"""Free-text calls waiting for their confirmation: the seam, and the one-gateway store.

When `/v1/execute` plans a call that must be confirmed (gateway/core/free_text.py), the
planned call is kept here under a random token, for the caller that planned it and for a short
time; sending the token back takes it out, so it runs exactly once. The token is only a handle:
the function and the exact arguments stay on this side, where the caller cannot change them.

Locally (`LocalConfirmations`) the calls live in this process; in Redis
(redis_confirmations.py) every replica can take a call another one planned.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from toolmesh.errors import ConfirmationInvalid, PermissionDenied

#: Pending calls kept in one process at most; the oldest go first.
MAX_PENDING = 10_000


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A planned free-text call, as it will run once confirmed."""

    principal: str
    function: str
    arguments: dict[str, Any]
    sources: dict[str, str]
    prompt: str
    session_id: str | None = None
    routing_id: str = ""
    #: What the router matched for the prompt (learning needs it to be this function).
    match: str | None = None
    follow_up: bool = False
    code: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> PendingCall:
        return cls(**json.loads(text))


def new_token() -> str:
    """An unguessable handle (128 bits)."""
    return secrets.token_urlsafe(16)


def refused_for(principal: str) -> PermissionDenied:
    return PermissionDenied(
        f"this confirmation was issued to another caller, not to {principal!r}", param="confirm"
    )


def unknown_confirmation() -> ConfirmationInvalid:
    return ConfirmationInvalid(
        "no pending call has this confirmation: it expired, was used already, or never existed;"
        " send the prompt again",
        param="confirm",
    )


class Confirmations(Protocol):
    async def put(self, call: PendingCall, ttl: float) -> str:
        """Keep `call` for `ttl` seconds; returns its token."""
        ...

    async def take(self, token: str, principal: str) -> PendingCall:
        """The call under `token`, removed so it runs once. ConfirmationInvalid when there is
        none (expired, taken, never made); PermissionDenied, leaving it in place, when it was
        planned for another principal."""
        ...


class LocalConfirmations:
    """`Confirmations` in this process (one gateway)."""

    def __init__(self, size: int = MAX_PENDING) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._calls: OrderedDict[str, tuple[float, PendingCall]] = OrderedDict()

    async def put(self, call: PendingCall, ttl: float) -> str:
        token = new_token()
        now = time.monotonic()
        with self._lock:
            self._calls[token] = (now + ttl, call)
            while len(self._calls) > self._size:
                self._calls.popitem(last=False)
        return token

    async def take(self, token: str, principal: str) -> PendingCall:
        with self._lock:
            held = self._calls.get(token)
            if held is None or held[0] <= time.monotonic():
                self._calls.pop(token, None)
                raise unknown_confirmation()
            call = held[1]
            if call.principal != principal:
                raise refused_for(principal)
            del self._calls[token]
        return call
