"""API keys, their scopes and their rate limits.

Keys are only ever held as SHA-256 hashes. A key's scopes are globs over
qualified function names; listings show only what the key may call. With no
keys configured the gateway is open (and binds to loopback by default).
"""

from __future__ import annotations

import fnmatch
import hmac
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolmesh.config import KeyConfig, hash_key
from toolmesh.errors import PermissionDenied, RateLimited, Unauthenticated


class TokenBucket:
    """`rate` tokens a second up to `burst`; each call takes one."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._updated = time.monotonic()

    def take(self) -> float:
        """Take a token: 0.0 if there was one, else the seconds until there will be."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
        self._updated = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self.rate


@dataclass
class Principal:
    """Who is calling: a configured key, the mesh's own pods, or anyone (open gateway)."""

    name: str
    scopes: Sequence[str] = ("*",)
    bucket: TokenBucket | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._everything = "*" in self.scopes

    def allows(self, qualified_name: str) -> bool:
        return self._everything or any(fnmatch.fnmatchcase(qualified_name, scope) for scope in self.scopes)

    def check(self, qualified_name: str) -> None:
        if not self.allows(qualified_name):
            raise PermissionDenied(f"key {self.name!r} may not call {qualified_name!r}", param="function")

    def spend(self) -> None:
        """Count one call against the key's rate limit."""
        if self.bucket is not None:
            wait = self.bucket.take()
            if wait > 0:
                raise RateLimited(f"key {self.name!r} is over its rate limit", retry_after=wait)


ANONYMOUS = Principal("anonymous")
MESH = Principal("mesh")


class Authenticator:
    """Turns an `Authorization` header (or gRPC metadata) into a Principal."""

    def __init__(self, keys: Mapping[str, KeyConfig], internal_token: str | None = None) -> None:
        self._principals = {
            digest: Principal(
                key.name,
                key.scopes,
                TokenBucket(key.rate, key.burst or max(1, int(key.rate))) if key.rate else None,
            )
            for digest, key in keys.items()
        }
        self._internal = internal_token

    @property
    def internal_token(self) -> str | None:
        """The token the mesh's own pods use for ctx.invoke calls."""
        return self._internal

    @property
    def open(self) -> bool:
        return not self._principals

    def authenticate(self, authorization: str | None) -> Principal:
        token = _bearer(authorization)
        if self._internal is not None and token is not None and hmac.compare_digest(token, self._internal):
            return MESH
        if self.open:
            return ANONYMOUS
        if token is None:
            raise Unauthenticated("missing API key: send 'Authorization: Bearer <key>'")
        principal = self._principals.get(hash_key(token))
        if principal is None:
            raise Unauthenticated("unknown API key")
        return principal


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
