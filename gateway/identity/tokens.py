"""Bearer tokens (JWTs) from one OAuth issuer: discovery, its keys, and validating a token.

The issuer's metadata is found once (OpenID Connect discovery, then RFC 8414), its keys (JWKS)
are fetched and kept; validating a token is then synchronous CPU work (a signature check, a few
µs-tens of µs) and a token seen before is answered from a small cache until it expires. A token
signed with a key the gateway does not know (`kid`) makes the front door `await prepare(token)`
first, which fetches the keys again, at most once per `jwks_min_interval` and one fetch at a time,
so a flood of forged tokens costs the issuer nothing.

Refused: a wrong or missing audience (RFC 8707: the gateway's resource identifier), a wrong
issuer, expired or not yet valid tokens (with `clock_skew`), a signature by a key not the
issuer's, `alg: none` and any symmetric algorithm (HS256 "signed" with the public key).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from toolmesh.errors import Unauthenticated
from toolmesh.gateway.identity.protected_resource import ProtectedResource

log = logging.getLogger("toolmesh.oauth")

#: Validated tokens remembered (until they expire), so a client's repeated calls skip the signature.
CACHED_TOKENS = 4096
#: Longest token read at all: a JWT from a real issuer is a few KB.
MAX_TOKEN_CHARS = 16 * 1024


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    """Who a valid token speaks for: its subject, its client, its scopes and its groups or roles
    (as the issuer wrote them)."""

    subject: str
    client_id: str
    scopes: frozenset[str]
    expires: float
    groups: frozenset[str] = frozenset()


def looks_like_jwt(token: str) -> bool:
    """A compact JWS (three base64url parts, a JSON header), not an API key."""
    return token.startswith("eyJ") and token.count(".") == 2


def discovery_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: OpenID Connect's (appended to the issuer) and RFC 8414's
    (inserted before the issuer's path), as the MCP authorization spec lists them."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


class TokenValidator:
    """Validates the issuer's tokens for one resource (the gateway)."""

    def __init__(self, resource: ProtectedResource, http: httpx.AsyncClient | None = None) -> None:
        config = self.config = resource.config
        self.resource = resource
        self._http = http or httpx.AsyncClient(timeout=config.timeout, follow_redirects=False)
        self._own_http = http is None
        self._keys: dict[str, jwt.PyJWK] = {}
        #: Keys without a `kid`: tried in turn for a token without one.
        self._anonymous: list[jwt.PyJWK] = []
        #: The JWKS entries last fetched, to tell when the issuer withdrew one.
        self._published: frozenset[str] = frozenset()
        self._jwks_uri: str | None = None
        #: The issuer's metadata, once discovered (for the console's sign-in).
        self._metadata: Mapping[str, Any] = {}
        self._fetched = -float("inf")  # monotonic time of the last fetch (tried)
        self._loaded = -float("inf")  # ... and of the last that succeeded
        self._lock = asyncio.Lock()
        self._seen: OrderedDict[str, TokenIdentity] = OrderedDict()

    async def start(self) -> None:
        """Find the issuer's keys. An issuer that cannot be reached now is not fatal: tokens are
        refused (401) until a later `prepare` reaches it."""
        try:
            await self._refresh()
        except Unauthenticated as exc:
            log.warning("oauth: %s; tokens are refused until it answers", exc.message)

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    # -- the keys ---------------------------------------------------------------------------

    async def prepare(self, token: str) -> None:
        """Before `validate`, off the hot path: fetch the keys again when `token` names a key not
        known yet or the keys are older than `jwks_max_age` (rate limited). Never raises."""
        if token in self._seen or not looks_like_jwt(token):
            return
        stale = time.monotonic() - self._loaded > self.config.jwks_max_age
        if not stale:
            try:
                kid = _json_segment(_parts(token)[0], "header").get("kid")
            except Unauthenticated:
                return  # `validate` says why
            if kid is None or kid in self._keys:
                return
        now = time.monotonic()
        if now - self._fetched < self.config.jwks_min_interval:
            return
        async with self._lock:
            if self._fetched > now:  # another request fetched while this one waited
                return
            try:
                await self._refresh()
            except Unauthenticated as exc:
                log.warning("oauth: %s", exc.message)

    async def _refresh(self) -> None:
        self._fetched = time.monotonic()
        if self._jwks_uri is None:
            self._jwks_uri = await self._discover()
        document = await self._get_json(self._jwks_uri, "the issuer's keys (jwks_uri)")
        found = document.get("keys")
        if not isinstance(found, list):
            raise Unauthenticated(f"{self._jwks_uri} holds no `keys` list")
        keys: dict[str, jwt.PyJWK] = {}
        anonymous: list[jwt.PyJWK] = []
        for entry in found:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type this gateway cannot use (or a symmetric one): never trusted
            if key.algorithm_name not in self.config.algorithms:
                continue
            if isinstance(entry.get("kid"), str):
                keys[entry["kid"]] = key
            else:
                anonymous.append(key)
        published = frozenset(json.dumps(entry, sort_keys=True) for entry in found if isinstance(entry, dict))
        if self._published - published:
            self._seen.clear()  # a key the issuer withdrew no longer vouches for tokens seen before
        self._keys, self._anonymous, self._published = keys, anonymous, published
        self._loaded = time.monotonic()
        log.info("oauth: %d keys of %s", len(keys) + len(anonymous), self.config.issuer)

    async def _discover(self) -> str:
        for url in discovery_urls(self.config.issuer):
            try:
                metadata = await self._get_json(url, "the issuer's metadata")
            except Unauthenticated:
                continue
            if metadata.get("issuer") != self.config.issuer:
                # RFC 8414 §3.3: metadata naming another issuer must not be used.
                log.warning(
                    "oauth: %s names issuer %r, not %r", url, metadata.get("issuer"), self.config.issuer
                )
                continue
            jwks_uri = metadata.get("jwks_uri")
            if isinstance(jwks_uri, str) and jwks_uri.startswith(("https://", "http://")):
                self._metadata = metadata
                return jwks_uri
        raise Unauthenticated(f"no metadata with a jwks_uri found for the issuer {self.config.issuer}")

    async def _get_json(self, url: str, what: str) -> Mapping[str, Any]:
        try:
            response = await self._http.get(url, headers={"accept": "application/json"})
            document = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            raise Unauthenticated(f"cannot read {what} at {url}: {exc}") from None
        if not isinstance(document, dict):
            raise Unauthenticated(f"cannot read {what} at {url}: HTTP {response.status_code}")
        return document

    def sign_in(self) -> dict[str, str] | None:
        """What a browser needs to sign in at the issuer with PKCE (`[oauth] console_client_id`):
        None without that client, or before the issuer's metadata was read."""
        client = self.config.console_client_id
        endpoints = {name: self._metadata.get(name) for name in ("authorization_endpoint", "token_endpoint")}
        if client is None or not all(
            isinstance(url, str) and url.startswith(("https://", "http://")) for url in endpoints.values()
        ):
            return None
        scopes = " ".join(("openid", *self.resource.scopes))
        return {
            "issuer": self.config.issuer,
            "client_id": client,
            "scope": scopes,
            "resource": self.resource.audience,
            **{name: str(url) for name, url in endpoints.items()},
        }

    # -- a token ----------------------------------------------------------------------------

    def validate(self, token: str) -> TokenIdentity:
        """The identity `token` carries; Unauthenticated naming why it is refused."""
        seen = self._seen.get(token)
        if seen is not None:
            if seen.expires + self.config.clock_skew > time.time():
                return seen
            del self._seen[token]
        if len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated("the bearer token is too long")
        header_part, payload_part, signature_part = _parts(token)
        header = _json_segment(header_part, "header")
        algorithm = header.get("alg")
        if algorithm not in self.config.algorithms:
            raise Unauthenticated(f"the bearer token's algorithm {algorithm!r} is not accepted")
        if "crit" in header:
            # RFC 7515 §4.1.11: extensions this gateway does not know (b64=false...) must be refused.
            raise Unauthenticated(
                "the bearer token names critical header extensions this gateway does not know"
            )
        signing_input = f"{header_part}.{payload_part}".encode()
        signature = _segment(signature_part, "signature")
        self._verify(signing_input, signature, algorithm, self._candidates(header.get("kid")))
        claims = self._check_claims(_json_segment(payload_part, "payload"))
        identity = self._identity(claims)
        self._seen[token] = identity
        if len(self._seen) > CACHED_TOKENS:
            self._seen.popitem(last=False)
        return identity

    def _candidates(self, kid: Any) -> Sequence[jwt.PyJWK]:
        if isinstance(kid, str):
            key = self._keys.get(kid)
            if key is None:
                raise Unauthenticated("the bearer token is signed with a key the issuer does not publish")
            return (key,)
        candidates = self._anonymous or list(self._keys.values())
        if not candidates:
            raise Unauthenticated("the issuer's keys are not known yet")
        return candidates

    def _verify(
        self, signing_input: bytes, signature: bytes, algorithm: str, keys: Sequence[jwt.PyJWK]
    ) -> None:
        """The signature check, with PyJWT's algorithms (cryptography underneath); the compact form
        is read here rather than by `jwt.decode`, whose base64 check costs more than an RSA verify."""
        verifier = _ALGORITHMS[algorithm]
        usable = [key for key in keys if key.algorithm_name == algorithm]
        if not usable:
            raise Unauthenticated(f"no key of the issuer signs with {algorithm}")
        for key in usable:
            try:
                if verifier.verify(signing_input, key.key, signature):
                    return
            except (jwt.PyJWTError, ValueError, TypeError):
                continue
        raise Unauthenticated("the bearer token's signature is not the issuer's")

    def _check_claims(self, claims: dict[str, Any]) -> dict[str, Any]:
        now, skew = time.time(), self.config.clock_skew
        for name in ("exp", "iss", "aud", "sub"):
            if name not in claims:
                raise Unauthenticated(f"the bearer token is refused: it has no {name!r} claim")
        expires = claims["exp"]
        if not _is_time(expires):
            raise Unauthenticated("the bearer token is refused: its 'exp' is not a time")
        if expires + skew <= now:
            raise Unauthenticated("the bearer token is refused: it has expired")
        not_before = claims.get("nbf")
        if not_before is not None and (not _is_time(not_before) or not_before - skew > now):
            raise Unauthenticated("the bearer token is refused: it is not valid yet (nbf)")
        if claims["iss"] != self.config.issuer:
            raise Unauthenticated("the bearer token is refused: it is from another issuer (iss)")
        return claims

    def _identity(self, claims: Mapping[str, Any]) -> TokenIdentity:
        audience = claims["aud"]
        audiences = (
            [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        )
        if not any(isinstance(a, str) and self.resource.accepts(a) for a in audiences):
            raise Unauthenticated(
                f"the bearer token is refused: it is not for this resource ({self.resource.audience})"
            )
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise Unauthenticated("the bearer token has no subject (`sub`)")
        scopes = _names(claims, self.config.scope_claims)
        groups = _names(claims, self.config.group_claims) if self.config.groups else frozenset()
        client = claims.get(self.config.client_claim) or claims.get("azp") or ""
        return TokenIdentity(subject, str(client), scopes, float(claims["exp"]), groups)


def _names(claims: Mapping[str, Any], paths: Sequence[str]) -> frozenset[str]:
    """The names the claims at `paths` hold: a space-separated string or a list of strings; a
    dotted path reaches into objects. Anything else is ignored, as a claim this gateway reads not."""
    found: set[str] = set()
    for path in paths:
        value: Any = claims
        for step in path.split("."):
            value = value.get(step) if isinstance(value, Mapping) else None
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(s for s in value if isinstance(s, str))
    return frozenset(found)


_ALGORITHMS = jwt.algorithms.get_default_algorithms()
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


def _parts(token: str) -> tuple[str, str, str]:
    parts = token.split(".")
    if len(parts) != 3:
        raise Unauthenticated("the bearer token is not a readable JWT: it must have three parts")
    return parts[0], parts[1], parts[2]


def _segment(part: str, what: str) -> bytes:
    try:
        if _BASE64URL.fullmatch(part):
            return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except ValueError:  # binascii.Error: a length no encoder makes
        pass
    raise Unauthenticated(f"the bearer token is not a readable JWT: its {what} is not base64url")


def _json_segment(part: str, what: str) -> dict[str, Any]:
    try:
        document = json.loads(_segment(part, what))
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise Unauthenticated(f"the bearer token is not a readable JWT: its {what} is not a JSON object")
    return document


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
