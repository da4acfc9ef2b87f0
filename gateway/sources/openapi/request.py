"""A call's arguments as the HTTP request of its operation: path, query, headers, cookies, body.

Each parameter is written in its style (parameters.py). Cookie parameters are one `Cookie` header,
after the runtime's own cookies if its `headers` set any.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from toolmesh.errors import InvalidArguments, Violation
from toolmesh.gateway.sources.openapi.bodies import encode
from toolmesh.gateway.sources.openapi.operations import BODY, Operation
from toolmesh.gateway.sources.openapi.parameters import cookie_value, header_value, path_value, query_pairs


def build_request(
    client: httpx.AsyncClient,
    operation: Operation,
    arguments: dict[str, Any],
    timeout: float,
    fixed_query: Sequence[str] = (),
) -> httpx.Request:
    """The request for a call; InvalidArguments (before anything is sent) when they do not fit.
    `fixed_query` holds the runtime's own query parameters, encoded (`name=value`)."""
    _check(operation, arguments)
    path = operation.path
    query: list[str] = list(fixed_query)
    headers: dict[str, str] = {}
    cookies: list[str] = []
    body: Any = None
    merged: dict[str, Any] = {}
    for name, value in arguments.items():
        parameter = operation.parameters.get(name)
        if parameter is None:
            if name in operation.body_properties:
                merged[name] = value
            elif name == BODY:
                body = value
            continue
        if parameter.location == "path":
            path = path.replace("{" + parameter.name + "}", path_value(parameter, value))
        elif parameter.location == "query":
            query.extend(query_pairs(parameter, value))
        elif parameter.location == "header":
            headers[parameter.name] = _header(operation, name, header_value(parameter, value))
        else:
            cookies.append(cookie_value(parameter, value))
    if operation.body_properties and (merged or operation.body_required):
        body = merged
    content = None
    if body is not None:
        content, headers["content-type"] = encode(operation, body)
    if cookies:
        own = client.headers.get("cookie")
        headers["cookie"] = "; ".join([own, *cookies] if own else cookies)
    url = (operation.server.rstrip("/") if operation.server else "") + path
    if query:
        url += ("&" if "?" in url else "?") + "&".join(query)
    method = operation.method.upper()
    return client.build_request(method, url, headers=headers, content=content, timeout=timeout)


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


def _header(operation: Operation, name: str, value: str) -> str:
    # A line break would end the header (or smuggle another); refused as the caller's mistake.
    if any(c in value for c in "\r\n\0"):
        message = f"argument {name!r} is a header and cannot hold line breaks"
        raise InvalidArguments(
            f"{operation.spec.qualified_name}: {message}",
            [Violation(name, "one line", "line breaks", message)],
        )
    return value
