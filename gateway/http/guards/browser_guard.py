"""What keeps web pages out: `Host`, `Origin` and `Content-Type` checks on every HTTP surface.

A gateway on loopback with no keys (the default) trusts whoever reaches it, and a browser
reaches it on behalf of any page. Three things stop a page from using that:

- **Host**: with DNS rebinding a page's own name resolves to 127.0.0.1, so its requests
  arrive here carrying that name. Only loopback names, IP literals (a rebinding attack
  always presents a name) and the configured `[gateway] allowed_hosts` are served.
- **Origin**: browsers send it on every cross-origin request that can change state.
  Requests from the gateway's own origin, from loopback origins and from
  `[gateway] allowed_origins` pass; others are refused before anything runs. Clients
  that are not browsers send no Origin and are not affected.
- **Content-Type**: a page may send a cross-origin form or `text/plain` POST without
  asking first; a body declared as anything but JSON is refused (415), so even a browser
  that sent no Origin could not make one. (A body with no Content-Type at all is read as
  JSON: code often omits it, and a page cannot send one cross-origin without an Origin.)

Allowed origins also get CORS answers (preflights, `Access-Control-Allow-Origin`),
since a browser app there could not read any response otherwise.
"""

from __future__ import annotations

import fnmatch
import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from toolmesh.error_shapes import http_error
from toolmesh.errors import PermissionDenied, ToolmeshError, UnsupportedMediaType

#: Methods that may change state and so must carry their body as JSON.
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Where errors are JSON-RPC shaped (the MCP endpoint).
_JSONRPC_PREFIX = "/mcp"
#: Most Host values whose verdict a guard remembers: they are the client's, so the memory is
#: bounded (a full one starts again); a gateway sees a handful (its names, IPs and ports).
HOSTS_REMEMBERED = 64


def split_host(host: str) -> tuple[str, str]:
    """`("example.com", "8080")` from "example.com:8080"; IPv6 literals lose their brackets."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name.lower(), rest.removeprefix(":")
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    return name.lower(), port


def is_loopback_name(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_allowed(host: str | None, allowed: Iterable[str]) -> bool:
    """Whether a request addressed to `host` (the Host header) is one this gateway serves."""
    if host is None:
        return True  # HTTP/1.0 without Host: no browser sends that
    name, _ = split_host(host)
    if _is_ip(name) or is_loopback_name(name):
        return True
    return any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in allowed)


def origin_allowed(origin: str | None, allowed: Iterable[str], host: str | None = None) -> bool:
    """Whether a browser at `origin` may call: no Origin, the gateway's own origin (`host`),
    a loopback origin, or one matching a glob of `allowed` ("https://app.example.com", "*")."""
    if origin is None:
        return True
    if any(fnmatch.fnmatchcase(origin, pattern) for pattern in allowed):
        return True
    try:
        parts = urlsplit(origin)
        name = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not name:
        return False
    if host is not None and parts.netloc.lower() == host.lower():
        return True
    return is_loopback_name(name.lower())


def json_content_type(content_type: str | None) -> bool:
    """JSON, or not declared."""
    if content_type is None:
        return True
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    if length is not None:
        return length.strip() not in ("", "0")
    return "transfer-encoding" in headers


class BrowserGuard:
    """ASGI middleware refusing requests a web page could forge; see the module docstring."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: tuple[str, ...] = (), allowed_origins: tuple[str, ...] = ()
    ) -> None:
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = allowed_origins
        # The Host check parses an IP literal or matches globs: once per value, not per request.
        self._hosts: dict[str, bool] = {}
        self.app: ASGIApp = app
        if allowed_origins:
            pattern = "|".join(fnmatch.translate(origin) for origin in allowed_origins)
            self.app = CORSMiddleware(
                app,
                allow_origin_regex=pattern,
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["*"],
                expose_headers=["Mcp-Session-Id", "Retry-After", "X-Request-Id"],
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                self.check(Headers(scope=scope), scope["method"])
            except ToolmeshError as error:
                await self._refuse(error, str(scope.get("path", "")), send)
                return
        await self.app(scope, receive, send)

    def check(self, headers: Headers, method: str) -> None:
        host = headers.get("host")
        if not self._host_allowed(host):
            raise PermissionDenied(
                f"this gateway does not serve the host {host!r}; add it to [gateway] allowed_hosts",
                param="Host",
            )
        origin = headers.get("origin")
        if not origin_allowed(origin, self.allowed_origins, host):
            raise PermissionDenied(
                f"origin {origin!r} may not call this gateway; add it to [gateway] allowed_origins",
                param="Origin",
            )
        if method in _WRITES and _has_body(headers) and not json_content_type(headers.get("content-type")):
            raise UnsupportedMediaType(
                f"send the body as JSON with 'Content-Type: application/json', "
                f"not {headers.get('content-type')!r}",
                param="Content-Type",
            )

    def _host_allowed(self, host: str | None) -> bool:
        if host is None:
            return host_allowed(host, self.allowed_hosts)
        verdict = self._hosts.get(host)
        if verdict is None:
            if len(self._hosts) >= HOSTS_REMEMBERED:
                self._hosts.clear()
            verdict = self._hosts[host] = host_allowed(host, self.allowed_hosts)
        return verdict

    @staticmethod
    async def _refuse(error: ToolmeshError, path: str, send: Send) -> None:
        rendered = http_error(error, jsonrpc=path.startswith(_JSONRPC_PREFIX))
        headers = [(key.encode(), value.encode()) for key, value in rendered.headers.items()]
        await send({"type": "http.response.start", "status": rendered.status, "headers": headers})
        await send({"type": "http.response.body", "body": rendered.body})
