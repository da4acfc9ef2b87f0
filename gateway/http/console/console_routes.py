"""`GET /ui/...`: the web console's files, served from the package.

The console is static: its files hold no data, so they are served to anyone the
`BrowserGuard` lets in, with no key. Every data call the page makes goes to the public
HTTP API (same origin, so the guard allows it) with the key the user types in, and
sees what that key may see.

The files are read once, when the app is built (a few tens of KB), and answered from
memory with an ETag. A strict content-security policy keeps any script but the
console's own out of the page: it renders function results, which are data from
elsewhere.

With `[oauth] console_client_id`, `GET /ui/sign-in.json` tells the page how to sign in at
the issuer (authorization code with PKCE, a public client): the page goes to the issuer's
authorization endpoint, comes back to `/ui/` with a code and trades it, with its verifier,
at the token endpoint, whose origin is then the one the policy lets the page fetch from
besides the gateway. Without it, the file is `{}` and the page asks for a key or a token.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

PREFIX = "/ui"
#: Scripts, styles and fetches from the gateway only; images may be `data:` (results
#: carry them base64-encoded) and downloads `blob:`; never framed, no plugins.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}


@dataclass(frozen=True)
class ConsoleAsset:
    """One file of the console, read into memory."""

    body: bytes
    media_type: str
    etag: str


def load_assets() -> dict[str, ConsoleAsset]:
    """The console's files by name ("index.html", "main.js", ...)."""
    folder = resources.files("toolmesh.gateway.http.console").joinpath("static")
    assets = {}
    for entry in folder.iterdir():
        if not entry.is_file() or entry.name.startswith("."):
            continue
        body = entry.read_bytes()
        suffix = "." + entry.name.rpartition(".")[2]
        media = _TYPES.get(suffix) or mimetypes.guess_type(entry.name)[0] or "application/octet-stream"
        assets[entry.name] = ConsoleAsset(body, media, '"' + hashlib.sha256(body).hexdigest()[:16] + '"')
    return assets


#: What the console needs to sign in at an OAuth issuer (see gateway/identity/tokens.py), or None.
SignIn = Callable[[], dict[str, str] | None]


def _policy(sign_in: dict[str, str] | None) -> str:
    if sign_in is None:
        return CONTENT_SECURITY_POLICY
    token = urlsplit(sign_in["token_endpoint"])
    return f"{CONTENT_SECURITY_POLICY}; connect-src 'self' {token.scheme}://{token.netloc}"


def _headers(asset: ConsoleAsset, policy: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        # Revalidated every time (cheap: a 304 by ETag), so an upgraded gateway serves its own console.
        "Cache-Control": "no-cache",
        "ETag": asset.etag,
    }


def console_routes(sign_in: SignIn | None = None) -> list[BaseRoute]:
    """The console's routes: `/` takes a browser to the console (and tells a program where
    things are), `/ui` redirects to `/ui/` (so the page's relative imports resolve under it),
    `/ui/` is the page, `/ui/<file>` its scripts and styles, `/ui/sign-in.json` how to sign in
    at the OAuth issuer when `sign_in` gives it."""
    assets = load_assets()

    def signing_in() -> dict[str, str] | None:
        return sign_in() if sign_in is not None else None

    async def sign_in_file(request: Request) -> Response:
        # `{}` when there is none, not a 404: the page asks on every load, and a browser reports
        # every error status as an error of the page.
        return JSONResponse(signing_in() or {}, headers={"Cache-Control": "no-store"})

    async def redirect(request: Request) -> Response:
        # Relative, so it holds behind a proxy that mounts the gateway under a prefix.
        return RedirectResponse("ui/", status_code=308)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"] or "index.html"
        found = assets.get(name)
        if found is None:
            raise HTTPException(404, f"the console has no file {name!r}")
        headers = _headers(found, _policy(signing_in()))
        if request.headers.get("if-none-match") == found.etag:
            return Response(status_code=304, headers=headers)
        return Response(found.body, media_type=found.media_type, headers=headers)

    async def root(request: Request) -> Response:
        # A browser pointed at the gateway's address wants the console; a program gets a map.
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("ui/", status_code=307)
        return JSONResponse(
            {"name": "toolmesh", "console": "/ui/", "api": "/openapi.json", "health": "/healthz"}
        )

    return [
        Route("/", root, methods=["GET", "HEAD"]),
        Route(PREFIX, redirect, methods=["GET", "HEAD"]),
        Route(PREFIX + "/sign-in.json", sign_in_file, methods=["GET"]),
        Route(PREFIX + "/{name:path}", asset, methods=["GET", "HEAD"]),
    ]
