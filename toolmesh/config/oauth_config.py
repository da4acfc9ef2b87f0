"""`toolmesh.toml`'s `[oauth]` section: the gateway as an OAuth 2.1 resource server (the MCP
authorization spec). `toolmesh.config` reads it with the rest; gateway/identity/ uses it.

    [oauth]
    issuer = "https://login.example.com/realms/tools"   # http:// only on loopback
    audience = "https://tools.example.com/mcp"          # default: [gateway] public_url
    scopes = { "tools.read" = ["list_*", "get_*"], "tools.admin" = ["*", "@admin"] }
    groups = { "platform-admins" = ["*", "@admin"] }    # from the token's groups/roles claims
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from toolmesh.config import config_defaults as defaults

#: Signature algorithms accepted by default: asymmetric only (an HMAC "signed" with the public
#: key would verify against a key every client can read).
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_issuer_url(url: str, what: str) -> str:
    """`url` if it is https://, or http:// on a loopback host; ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return url
    if parts.scheme == "http" and parts.hostname:
        raise ValueError(f"{what} {url!r} must use https:// (http:// is accepted only on loopback)")
    raise ValueError(f"{what} {url!r} is not an https:// URL")


class OAuthConfig(BaseModel):
    """Bearer tokens (JWTs) from one issuer, next to the API keys of `[[keys]]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The authorization server; its metadata is found at /.well-known/openid-configuration or
    #: /.well-known/oauth-authorization-server (RFC 8414), and its keys at its `jwks_uri`.
    issuer: str
    #: The resource identifier tokens must carry in `aud` (RFC 8707); None: `[gateway] public_url`.
    audience: str | None = None
    #: Token scope -> toolmesh scopes (function globs) and permissions ("@admin", "@metrics").
    #: A token gets the union of what its scopes map to; a scope not in the table grants nothing.
    scopes: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: The claims read for scopes, in order (`scope`: a space-separated string; `scp`: a list).
    scope_claims: tuple[str, ...] = ("scope", "scp")
    #: Group or role -> toolmesh scopes and permissions, as `scopes`: what the issuer says a person
    #: *is* (a directory group, an app role) grants as much as what a token was issued *for*.
    groups: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: The claims read for groups and roles; a dotted name reaches into an object
    #: (Keycloak's `realm_access.roles`). Each holds a list of names or a space-separated string.
    group_claims: tuple[str, ...] = ("groups", "roles", "realm_access.roles")
    #: The claim naming the client (for the audit trail).
    client_claim: str = "client_id"
    #: Calls per second each subject may make (None: unlimited) and the burst above it, as `[[keys]]`.
    rate: float | None = Field(None, gt=0)
    #: Calls allowed at once above `rate`, per subject, as `[[keys]] burst`.
    burst: int | None = Field(None, ge=1)
    #: Seconds of leeway on `exp`, `nbf` and `iat`.
    clock_skew: float = Field(defaults.DEFAULT_OAUTH_CLOCK_SKEW, ge=0, le=600)
    #: Signature algorithms accepted; asymmetric ones only.
    algorithms: tuple[str, ...] = ASYMMETRIC
    #: Fewest seconds between two fetches of the issuer's keys (a token with an unknown `kid`
    #: triggers one; a flood of forged kids does not hammer the issuer).
    jwks_min_interval: float = Field(defaults.DEFAULT_OAUTH_JWKS_MIN_INTERVAL, ge=0)
    #: Seconds after which the keys are fetched again anyway (key rotation, revoked keys).
    jwks_max_age: float = Field(defaults.DEFAULT_OAUTH_JWKS_MAX_AGE, gt=0)
    #: A public client of the issuer (no secret; PKCE) whose redirect URI is the console's own
    #: address (`<public_url>/ui/`): with one, the web console offers to sign in at the issuer.
    console_client_id: str | None = Field(None, min_length=1)
    #: Seconds one request to the issuer may take.
    timeout: float = Field(defaults.DEFAULT_OAUTH_TIMEOUT, gt=0)

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, issuer: str) -> str:
        return check_issuer_url(issuer, "issuer")

    @field_validator("audience")
    @classmethod
    def _audience(cls, audience: str | None) -> str | None:
        if audience is not None and not audience.strip():
            raise ValueError("audience must not be empty")
        return audience

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, algorithms: tuple[str, ...]) -> tuple[str, ...]:
        wrong = sorted(set(algorithms) - set(ASYMMETRIC))
        if wrong:
            raise ValueError(
                f"algorithms {', '.join(wrong)} are not asymmetric ones ({', '.join(ASYMMETRIC)})"
            )
        if not algorithms:
            raise ValueError("algorithms must name at least one")
        return algorithms

    @field_validator("scopes", "groups")
    @classmethod
    def _scopes(cls, table: dict[str, tuple[str, ...]], info: ValidationInfo) -> dict[str, tuple[str, ...]]:
        blank = sorted(name for name in table if not name.strip() or " " in name)
        if blank:
            what = "scope" if info.field_name == "scopes" else "group"
            raise ValueError(f"{what} names must be non-empty and hold no spaces: {blank!r}")
        return table

    @field_validator("scope_claims")
    @classmethod
    def _claims(cls, claims: tuple[str, ...]) -> tuple[str, ...]:
        if not claims:
            raise ValueError("scope_claims must name at least one claim")
        return claims
