"""A service's answer to a call: sent and received (redirects within the service followed, the
body read up to a limit) and made a Result.

    JSON (any `+json` type, any charset)  the structured result (and a JSON content item)
    text, or no content type              text
    anything else (an image, a PDF...)    binary, of the answer's media type
    no body (204)                         no content
    not 2xx                               a function error quoting the start of the body (an HTML
                                          page, as a proxy sends, as its text without markup)

A redirect to the service's own origin is followed (up to MAX_REDIRECTS), one to another origin
is not: the runtime's `headers` (its credentials) would go with it.
"""

from __future__ import annotations

import html
import json
import re

import httpx

from toolmesh.gateway.sources.openapi.operations import Operation
from toolmesh.gateway.sources.openapi.references import origin
from toolmesh.runtimes.functions.results import Binary, ErrorInfo, Json, Result, Text

#: How much of an error answer's body a function error quotes.
MAX_ERROR_BODY = 500
#: The largest answer read, in bytes; a larger one is a function error (a model could not read it).
MAX_ANSWER_BYTES = 16 * 1024 * 1024
#: Redirects followed within the service's origin.
MAX_REDIRECTS = 5


class _Refused(Exception):
    """An answer not read: the message says why."""


async def exchange(client: httpx.AsyncClient, operation: Operation, request: httpx.Request) -> Result:
    """Send `request` and make its answer a Result; httpx's errors are the caller's to map."""
    try:
        response, data = await _receive(client, request)
    except _Refused as exc:
        return Result.failure(ErrorInfo("function_error", f"{what(operation)}: {exc}"))
    return _result(operation, response, data)


async def _receive(client: httpx.AsyncClient, request: httpx.Request) -> tuple[httpx.Response, bytes]:
    start = origin(str(request.url))
    for _ in range(MAX_REDIRECTS):
        response = await client.send(request, stream=True)
        following = response.next_request if response.is_redirect else None
        if following is None:
            break
        await response.aclose()
        if origin(str(following.url)) != start:
            status, to = response.status_code, following.url
            raise _Refused(f"answered {status}, a redirect to {to} (another origin: not followed)")
        request = following
    else:
        response = await client.send(request, stream=True)
    try:
        return response, await _read(response)
    finally:
        await response.aclose()


async def _read(response: httpx.Response) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
        raise _Refused(f"the answer is {int(declared)} bytes, more than the {_mib(MAX_ANSWER_BYTES)} read")
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise _Refused(f"the answer is more than the {_mib(MAX_ANSWER_BYTES)} read")
        chunks.append(chunk)
    return b"".join(chunks)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def what(operation: Operation) -> str:
    return f"{operation.method.upper()} {operation.path}"


def _result(operation: Operation, response: httpx.Response, data: bytes) -> Result:
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not response.is_success:
        body = _text(response, data).strip()
        if kind == "text/html":
            body = _without_markup(body)
        if len(body) > MAX_ERROR_BODY:
            body = body[:MAX_ERROR_BODY] + "…"
        message = f"{what(operation)} answered {response.status_code} {response.reason_phrase}"
        return Result.failure(ErrorInfo("function_error", f"{message}: {body}" if body else message))
    if not data:
        return Result()
    if kind == "application/json" or kind.endswith("+json"):
        try:
            value = json.loads(data)
        except ValueError:
            return Result(content=[Text(_text(response, data))])
        declared = operation.spec.output_schema
        if declared is not None and declared.get("type") == "object" and not isinstance(value, dict):
            # Not what the document promised: MCP's structuredContent would not validate.
            return Result(content=[Json(data)])
        # The answer's own bytes: valid JSON, so not serialised again (as a Python function's is).
        return Result(content=[Json(data)], structured_json=data)
    if kind.startswith("text/") or not kind:
        return Result(content=[Text(_text(response, data))])
    return Result(content=[Binary(data, kind)])


def _text(response: httpx.Response, data: bytes) -> str:
    return data.decode(response.charset_encoding or "utf-8", errors="replace")


def _without_markup(page: str) -> str:
    """An HTML page's text, for an error message: its title, or its words without tags."""
    title = re.search(r"<title[^>]*>(.*?)</title>", page, re.IGNORECASE | re.DOTALL)
    if title and title.group(1).strip():
        return html.unescape(" ".join(title.group(1).split())) + " (an HTML page)"
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.IGNORECASE | re.DOTALL)
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", page).split()))
