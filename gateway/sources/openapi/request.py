"""A call's arguments as the HTTP request of its operation: path, query, headers, cookies, body.

Arrays in the path, a header or a cookie are comma-separated (OpenAPI's default styles, `simple`
and `form`); in the query, one parameter per item. Cookie parameters are one `Cookie` header,
after the runtime's own cookies if its `headers` set any.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from toolmesh.errors import InvalidArguments, Violation
from toolmesh.gateway.sources.openapi.bodies import encode, text
from toolmesh.gateway.sources.openapi.operations import BODY, Operation

#: What a cookie's value may hold unencoded (RFC 6265's cookie-octet, less the comma that
#: separates an array's items).
_COOKIE_SAFE = "!#$%&'()*+-./:<=>?@[]^_`{|}~"


def build_request(
    client: httpx.AsyncClient, operation: Operation, arguments: dict[str, Any], timeout: float
) -> httpx.Request:
    """The request for a call; InvalidArguments (before anything is sent) when they do not fit."""
    _check(operation, arguments)
    path = operation.path
    query: dict[str, Any] = {}
    headers: dict[str, str] = {}
    cookies: list[str] = []
    body: Any = None
    merged: dict[str, Any] = {}
    for name, value in arguments.items():
        where = operation.parameters.get(name)
        if where is None:
            if name in operation.body_properties:
                merged[name] = value
            elif name == BODY:
                body = value
            continue
        location, wire = where
        if location == "path":
            path = path.replace("{" + wire + "}", ",".join(quote(v, safe="") for v in _items(value)))
        elif location == "query":
            query[wire] = [text(v) for v in value] if isinstance(value, list) else text(value)
        elif location == "header":
            headers[wire] = _header(operation, name, ",".join(_items(value)))
        else:
            cookies.append(f"{wire}={','.join(quote(v, safe=_COOKIE_SAFE) for v in _items(value))}")
    if operation.body_properties and (merged or operation.body_required):
        body = merged
    content = None
    if body is not None:
        content, headers["content-type"] = encode(operation, body)
    if cookies:
        own = client.headers.get("cookie")
        headers["cookie"] = "; ".join([own, *cookies] if own else cookies)
    return client.build_request(
        operation.method.upper(), path, params=query, headers=headers, content=content, timeout=timeout
    )


def _check(operation: Operation, arguments: dict[str, Any]) -> None:
    schema = operation.spec.input_schema
    violations = [
        Violation(name, "an argument", "nothing", f"missing argument {name!r}")
        for name in schema.get("required", ())
        if name not in arguments
    ] + [
        Violation(name, "no such argument", type(arguments[name]).__name__, f"unknown argument {name!r}")
        for name in arguments
        if name not in schema["properties"]
    ]
    if violations:
        problems = "; ".join(v.message for v in violations)
        raise InvalidArguments(f"{operation.spec.qualified_name}: {problems}", violations)


def _items(value: Any) -> list[str]:
    """A value as its items' texts (OpenAPI's non-exploded styles: an object as key,value,...)."""
    if isinstance(value, list):
        return [text(v) for v in value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (str(k), text(v))]
    return [text(value)]


def _header(operation: Operation, name: str, value: str) -> str:
    # A line break would end the header (or smuggle another); refused as the caller's mistake.
    if any(c in value for c in "\r\n\0"):
        message = f"argument {name!r} is a header and cannot hold line breaks"
        raise InvalidArguments(
            f"{operation.spec.qualified_name}: {message}",
            [Violation(name, "one line", "line breaks", message)],
        )
    return value
