"""The lean path (gateway/http/lean/hot_routes.py) answers as the full Starlette app does.

A request with an ``Origin`` (here the gateway's own, which is allowed) takes the full app; the same
request without one takes the lean path. Their answers must not differ."""

from __future__ import annotations

from typing import Any

import httpx

from tests.gateway.conftest import StartGateway

CASES: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("POST", "/v1/functions/add/invoke", b'{"a": 2, "b": 3}', {}),
    ("POST", "/v1/functions/nope/invoke", b"{}", {}),
    ("POST", "/v1/functions/add/invoke", b'{"a": "two"}', {}),
    ("POST", "/v1/functions/add/invoke", b"[1, 2]", {}),
    ("POST", "/v1/functions/add/invoke", b'{"a": ', {}),
    ("POST", "/v1/functions/add/invoke", b"{}" + b" " * 5000, {}),  # past max_body_bytes
    ("POST", "/v1/functions/fail/invoke", b"{}", {}),
    ("POST", "/v1/functions/add/invoke", b"{}", {"content-type": "text/plain"}),
    ("POST", "/v1/functions/add/invoke", b"{}", {"x-request-id": "x" * 300}),
    ("POST", "/v1/functions/a/b/invoke", b"{}", {}),
    ("GET", "/v1/functions/add/invoke", b"", {}),
    (
        "POST",
        "/v1/tool_calls",
        b'{"tool_calls": [{"id": "1", "type": "function", '
        b'"function": {"name": "add", "arguments": "{\\"a\\": 1}"}}]}',
        {},
    ),
    ("POST", "/v1/tool_calls", b"null", {}),
]


def comparable(response: httpx.Response) -> tuple[int, str, Any]:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):  # ids and timings differ from call to call
        body = {k: v for k, v in body.items() if k not in ("request_id", "timing")}
    return response.status_code, response.headers.get("content-type", ""), body


async def test_the_lean_path_answers_as_the_full_app(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(max_body_bytes=4096)
    own = gateway.url
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        for _ in range(3):  # and again: nothing the lean path keeps changes a later answer
            for method, path, body, extra in CASES:
                headers = {"content-type": "application/json", **extra}
                lean = await http.request(method, path, content=body, headers=headers)
                full = await http.request(method, path, content=body, headers={**headers, "origin": own})
                assert comparable(lean) == comparable(full), (method, path, body[:40])
                assert lean.status_code < 500 or path.startswith("/v1/functions/fail"), lean.text
                assert ("x-request-id" in lean.headers) == ("x-request-id" in full.headers)
