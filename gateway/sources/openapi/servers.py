"""Where a document's operations are served: its `servers`, its paths' and its operations' own.

A server URL's `{variables}` take their defaults. A relative URL (and none at all, which the spec
reads as "/") is relative to where the document was found, so a service that serves its own
document (FastAPI's `/openapi.json`, with no `servers`) needs no `base_url`; a document read from
a file has nothing to be relative to, and then the runtime needs `base_url`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin

from toolmesh.gateway.sources.openapi.references import is_url


def first_server(servers: Any) -> str | None:
    """The first server's URL with its variables' defaults, None when `servers` names none."""
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], Mapping):
        return None
    url = str(servers[0].get("url", ""))
    variables = servers[0].get("variables")
    for name, variable in (variables if isinstance(variables, Mapping) else {}).items():
        default = variable.get("default", "") if isinstance(variable, Mapping) else ""
        url = url.replace("{" + str(name) + "}", str(default))
    return url


def server_url(document: Mapping[str, Any], location: str) -> str | None:
    """The document's server URL, made absolute against the document's own URL (no `servers`:
    the document's origin); None when it cannot be (a relative URL in a file)."""
    return absolute(first_server(document.get("servers")) or "/", location)


def absolute(url: str, base: str | None) -> str | None:
    """`url`, made absolute against `base` when it is relative and `base` an http(s) URL."""
    if is_url(url):
        return url
    return urljoin(base, url) if base is not None and is_url(base) else None


def no_server_reason(document: Mapping[str, Any]) -> str:
    """Why a document read from a file has no server URL, for the runtime's error."""
    url = first_server(document.get("servers"))
    if url is None:
        return "no base_url, and the document names no servers"
    return f"no base_url, and the document's server URL {url!r} is relative (to a file)"
