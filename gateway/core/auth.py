"""API keys, their scopes and their rate limits.

Keys are only ever held as SHA-256 hashes. A key's scopes are globs over
qualified function names; listings show only what the key may call, and a name
outside them is answered exactly like a name that does not exist. Scopes that
start with `@` are permissions rather than functions (`@metrics` reads
`/metrics`, `@admin` reloads runtimes); a glob never grants one. With no keys and no `[oauth]`
configured the gateway is open (and binds to loopback by default).

With `[oauth]`, a bearer token that is a JWT is validated instead (gateway/identity/tokens.py):
its subject becomes the Principal's name and its scopes, through `[oauth] scopes`, the
Principal's, so every front door and every per-caller listing follows with no code of its own.
A valid token that maps to no toolmesh scope is refused with 403 `insufficient_scope`. Refusals
carry the RFC 9728 challenge (`WWW-Authenticate: Bearer resource_metadata=...`). API keys keep
working next to tokens.

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
from toolmesh.gateway.identity.tokens import TokenValidator, looks_like_jwt
from toolmesh.gateway.state.limits import Bucket, LocalLimits, RateLimits
from toolmesh.protocol.pod_env import runtime_token


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
    #: For a bearer token: the OAuth client it was issued to (the audit trail names it).
    client_id: str = ""
    #: For a bearer token: the `WWW-Authenticate` challenge a refusal for too few scopes carries.
    challenge: str | None = field(default=None, repr=False)

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
            error = PermissionDenied(f"key {self.name!r} may not {what}: it needs the scope {permission!r}")
            if self.challenge is not None:
                error.challenge = self.challenge
            raise error

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
        tokens: TokenValidator | None = None,
    ) -> None:
        limits = self._limits = limits or LocalLimits()
        self.tokens = tokens
        #: Each subject's rate-limit bucket (`[oauth] rate`), made on its first call.
        self._subject_buckets: dict[str, Bucket] = {}
        self._scope_table = tokens.config.scopes if tokens is not None else {}
        self._group_table = tokens.config.groups if tokens is not None else {}
        self._challenge = tokens.resource.challenge() if tokens is not None else None
        self._scope_challenge = (
            tokens.resource.challenge("insufficient_scope") if tokens is not None else None
        )
        self._principals = {
            digest: Principal(
                key.name,
                key.scopes,
                limits.bucket(key.name, key.rate, key.burst or max(1, int(key.rate))) if key.rate else None,
            )
            for digest, key in keys.items()
        }
        self._internal = internal_token
        #: Names a token's subject may not take: jobs, sessions and confirmations are owned by name,
        #: so a subject equal to a key's name (or the mesh's own) would act as that key.
        self._taken = {p.name for p in self._principals.values()} | {ANONYMOUS.name, MESH.name}
        #: The pods' principals by runtime, made on first sight of each runtime's token.
        self._pods: dict[str, Principal] = {}

    @property
    def internal_token(self) -> str | None:
        """The token the mesh's own pods use for ctx.invoke calls."""
        return self._internal

    @property
    def open(self) -> bool:
        return not self._principals and self.tokens is None

    async def prepare(self, authorization: str | None) -> None:
        """Before `authenticate`, where a front door can wait: fetch the issuer's keys when the
        token names one not known yet (rate limited; see tokens.py). Free for API keys."""
        if self.tokens is not None:
            token = _bearer(authorization)
            if token is not None and looks_like_jwt(token):
                await self.tokens.prepare(token)

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
            what = "an access token or API key" if self.tokens is not None else "API key"
            raise self._unauthenticated(f"missing {what}: send 'Authorization: Bearer <{what}>'")
        if self.tokens is not None and looks_like_jwt(token):
            return self._token_principal(token)
        principal = self._principals.get(hash_key(token))
        if principal is None:
            raise self._unauthenticated("unknown API key")
        return principal

    def _unauthenticated(self, message: str) -> Unauthenticated:
        error = Unauthenticated(message)
        error.challenge = self._challenge
        return error

    def _token_principal(self, token: str) -> Principal:
        assert self.tokens is not None
        try:
            identity = self.tokens.validate(token)
        except Unauthenticated as exc:
            exc.challenge = self._challenge
            raise
        if identity.subject in self._taken:
            raise self._unauthenticated(
                f"the token's subject {identity.subject!r} is the name of an API key or of the mesh here"
            )
        scopes = sorted(
            {s for granted in identity.scopes for s in self._scope_table.get(granted, ())}
            | {s for group in identity.groups for s in self._group_table.get(group, ())}
        )
        if not scopes:
            known = ", ".join(sorted(self._scope_table)) or "none configured"
            groups = f"; groups: {', '.join(sorted(self._group_table))}" if self._group_table else ""
            denied = PermissionDenied(
                f"the token of {identity.subject!r} grants none of the scopes this gateway knows "
                f"({known}{groups})"
            )
            denied.challenge = self._scope_challenge
            raise denied
        return Principal(
            identity.subject,
            scopes,
            self._subject_bucket(identity.subject),
            client_id=identity.client_id,
            challenge=self._scope_challenge,
        )

    def _subject_bucket(self, subject: str) -> Bucket | None:
        assert self.tokens is not None
        rate, burst = self.tokens.config.rate, self.tokens.config.burst
        if rate is None:
            return None
        bucket = self._subject_buckets.get(subject)
        if bucket is None:
            # Prefixed: a subject's bucket never is a key's, in this process or in Redis.
            bucket = self._limits.bucket(f"oauth:{subject}", rate, burst or max(1, int(rate)))
            self._subject_buckets[subject] = bucket
        return bucket

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
