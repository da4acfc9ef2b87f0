"""API keys, their scopes and their rate limits.

Keys are only ever held as SHA-256 hashes. A key's scopes are globs over
qualified function names; listings show only what the key may call, and a name
outside them is answered exactly like a name that does not exist. Scopes that
start with `@` are permissions rather than functions (`@metrics` reads
`/metrics`, `@admin` reloads runtimes); a glob never grants one. With no keys configured the gateway is
open (and binds to loopback by default).

The rate limit is charged per unit of work, not per request: each function call
(one in a batch of 64 costs one, 64 cost 64), each routing of a free-text prompt
and each chat completion request. Listing is free. The buckets live where `[state]` says
(gateway/state/): in this process, or in Redis shared by every replica.
"""

from __future__ import annotations

import fnmatch
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolmesh.config import KeyConfig, hash_key
from toolmesh.errors import PermissionDenied, RateLimited, ToolmeshError, Unauthenticated
from toolmesh.gateway.state.limits import Bucket, LocalLimits, RateLimits
from toolmesh.runtimes.pod.pod_env import runtime_token


@dataclass
class Principal:
    """Who is calling: a configured key, the mesh's own pods, or anyone (open gateway)."""

    name: str
    scopes: Sequence[str] = ("*",)
    bucket: Bucket | None = field(default=None, repr=False)

    #: Whether this caller holds every `@` permission (the open gateway, the mesh's own pods).
    privileged: bool = False
    #: For a pod the gateway started: its runtime, which its token proves (see `runtime_token`).
    runtime: str | None = None

    def __post_init__(self) -> None:
        self._everything = "*" in self.scopes
        self._functions = tuple(s for s in self.scopes if not s.startswith(PERMISSION_PREFIX))

    def allows(self, qualified_name: str) -> bool:
        return self._everything or any(fnmatch.fnmatchcase(qualified_name, s) for s in self._functions)

    def may(self, permission: str) -> bool:
        """Whether the caller holds `permission` (e.g. "@metrics"): only named, never by glob."""
        return self.privileged or permission in self.scopes

    def require(self, permission: str, what: str) -> None:
        if not self.may(permission):
            raise PermissionDenied(f"key {self.name!r} may not {what}: it needs the scope {permission!r}")

    async def spend(self) -> None:
        """Count one unit of work (a call, a routing) against the key's rate limit: RateLimited
        over it, StateUnavailable when shared state (Redis) cannot tell."""
        if self.bucket is not None:
            wait = await self.bucket.take()
            if wait > 0:
                raise RateLimited(f"key {self.name!r} is over its rate limit", retry_after=wait)


#: Scopes that are permissions start with this; function names never do.
PERMISSION_PREFIX = "@"
#: Reading the gateway's Prometheus metrics on its HTTP port.
METRICS = "@metrics"
#: Operating the gateway: reloading its runtimes (`POST /v1/admin/reload`).
ADMIN = "@admin"
#: Teaching the router: its successful routed calls and its `POST /v1/route/feedback` become
#: learned examples that change routing for every caller (router/learning.py).
LEARN = "@learn"

ANONYMOUS = Principal("anonymous", privileged=True)
MESH = Principal("mesh", privileged=True)


class Authenticator:
    """Turns an `Authorization` header (or gRPC metadata) into a Principal."""

    def __init__(
        self,
        keys: Mapping[str, KeyConfig],
        internal_token: str | None = None,
        limits: RateLimits | None = None,
    ) -> None:
        limits = limits or LocalLimits()
        self._principals = {
            digest: Principal(
                key.name,
                key.scopes,
                limits.bucket(key.name, key.rate, key.burst or max(1, int(key.rate))) if key.rate else None,
            )
            for digest, key in keys.items()
        }
        self._internal = internal_token
        #: The pods' principals by runtime, made on first sight of each runtime's token.
        self._pods: dict[str, Principal] = {}

    @property
    def internal_token(self) -> str | None:
        """The token the mesh's own pods use for ctx.invoke calls."""
        return self._internal

    @property
    def open(self) -> bool:
        return not self._principals

    def key_names(self) -> set[str]:
        """The names of the configured keys."""
        return {principal.name for principal in self._principals.values()}

    def authenticate(self, authorization: str | None) -> Principal:
        token = _bearer(authorization)
        if token is not None and not token.isascii():
            # Keys are ASCII; a header with other bytes is malformed, not merely unknown.
            raise Unauthenticated(
                "the Authorization header must be 'Bearer <key>' in ASCII", param="Authorization"
            )
        if self._internal is not None and token is not None and hmac.compare_digest(token, self._internal):
            return MESH
        if self._internal is not None and token is not None and "." in token:
            pods = self._pod_principal(token)
            if pods is not None:
                return pods
        if self.open:
            return ANONYMOUS
        if token is None:
            raise Unauthenticated("missing API key: send 'Authorization: Bearer <key>'")
        principal = self._principals.get(hash_key(token))
        if principal is None:
            raise Unauthenticated("unknown API key")
        return principal

    def _pod_principal(self, token: str) -> Principal | None:
        assert self._internal is not None
        runtime = token.split(".", 1)[0]
        if not hmac.compare_digest(token, runtime_token(self._internal, runtime)):
            return None
        found = self._pods.get(runtime)
        if found is None:
            found = self._pods[runtime] = Principal("mesh", privileged=True, runtime=runtime)
        return found

    def name_of(self, authorization: str | None) -> str:
        """The name of the caller behind `authorization`, "" for one refused: for logs (no rate
        limit is spent)."""
        try:
            return self.authenticate(authorization).name
        except ToolmeshError:
            return ""


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
