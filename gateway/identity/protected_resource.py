"""The gateway as an OAuth protected resource (RFC 9728): its metadata document and the
`WWW-Authenticate` challenges that point clients at it (the MCP authorization spec).

The resource identifier is `[oauth] audience` (default `[gateway] public_url`); the metadata
for a path under it (`/.well-known/oauth-protected-resource/mcp`) names that path's URL as its
resource, and tokens for any resource under the gateway's identifier are accepted.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from toolmesh.config.oauth_config import OAuthConfig

#: RFC 9728 §3: where a resource's metadata is, inserted between its origin and its path.
WELL_KNOWN = "/.well-known/oauth-protected-resource"


class ProtectedResource:
    """What the gateway tells clients about the tokens it takes."""

    def __init__(self, config: OAuthConfig, audience: str) -> None:
        self.config = config
        self.audience = audience.rstrip("/") if urlsplit(audience).path not in ("", "/") else audience
        parts = urlsplit(audience)
        self.origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
        self._path = parts.path.rstrip("/")
        #: The scopes a client should ask for: every one the gateway maps to something.
        self.scopes = tuple(sorted(config.scopes))

    def accepts(self, audience: str) -> bool:
        """Whether a token for `audience` is for this gateway: its identifier or a URL under it."""
        base = self.audience.rstrip("/")
        return audience.rstrip("/") == base or audience.startswith(base + "/")

    def metadata_url(self) -> str:
        """Where the metadata of the gateway's resource identifier is served."""
        return f"{self.origin}{WELL_KNOWN}{self._path}"

    def document(self, path: str = "") -> dict[str, Any]:
        """The metadata for the resource at `path` under the gateway ("" for its identifier)."""
        resource = self.audience if not path else f"{self.audience.rstrip('/')}/{path.strip('/')}"
        document: dict[str, Any] = {
            "resource": resource,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolmesh",
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        return document

    def challenge(self, error: str | None = None, description: str | None = None) -> str:
        """A `WWW-Authenticate: Bearer ...` value (RFC 6750 §3, RFC 9728 §5.1)."""
        parts = [f'resource_metadata="{self.metadata_url()}"']
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        if error is not None:
            parts.append(f'error="{error}"')
        if description is not None:
            parts.append('error_description="{}"'.format(description.replace('"', "'").replace("\\", "/")))
        return "Bearer " + ", ".join(parts)
