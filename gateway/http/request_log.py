"""Around every HTTP request: its request id, its access-log line and its server span.

The id is the client's ``X-Request-Id`` when it is one the API accepts (see
`CallOptions.from_headers`), else a new one put into the request's headers, so the call made
for the request carries the same id; either way it comes back as the response's
``X-Request-Id``. The access-log line (`[gateway] access_log`) goes to the `toolmesh.access`
logger's stream as one JSON line:

    {"ts": ..., "level": "info", "logger": "toolmesh.access", "msg": "http", "method": "POST",
     "path": "/v1/functions/add/invoke", "status": 200, "duration_ms": 0.812,
     "request_id": "...", "principal": "anonymous", "bytes_out": 169}

With tracing on, the request runs inside a server span whose parent is the caller's
``traceparent``, so everything the gateway does for it (MCP and the chat proxy included) and
the pods' spans join the caller's trace.
"""

from __future__ import annotations

import logging
import re
import time
from json.encoder import encode_basestring_ascii as _quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

import toolmesh.tracing as tracing
from toolmesh.gateway.core.auth import Authenticator
from toolmesh.gateway.core.requests import MAX_REQUEST_ID
from toolmesh.logs.lines import LineBuffer, access
from toolmesh.protocol.calls import new_request_id

REQUEST_ID_HEADER = b"x-request-id"
_TRACE_HEADERS = (b"traceparent", b"tracestate")
#: Longest path written to the log: paths are the client's, and a line stays a line.
MAX_LOGGED_PATH = 512


#: A request id that is echoed: 1 to MAX_REQUEST_ID printable ASCII bytes (one C-level match
#: rather than a Python loop over the bytes).
_VALID_ID = re.compile(rb"[\x20-\x7e]{1,%d}" % MAX_REQUEST_ID)


def _valid_id(value: bytes) -> bool:
    return _VALID_ID.fullmatch(value) is not None


class RequestLog:
    """Pure ASGI middleware. The principal is found again from the Authorization header (a
    hash), so the front doors need not report to the log."""

    def __init__(self, app: ASGIApp, auth: Authenticator, *, log: bool = True) -> None:
        self.app = app
        self._auth = auth
        self.lines = LineBuffer() if log and access.isEnabledFor(logging.INFO) else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = b""
        authorization = None
        traceparent = tracestate = b""
        traced = tracing.enabled()
        for name, value in scope["headers"]:
            if name == REQUEST_ID_HEADER:
                request_id = value
            elif name == b"authorization":
                authorization = value.decode("latin-1")
            elif traced and name in _TRACE_HEADERS:
                if name == b"traceparent":
                    traceparent = value
                else:
                    tracestate = value
        if not request_id:
            request_id = new_request_id().encode()
            scope = {**scope, "headers": [*scope["headers"], (REQUEST_ID_HEADER, request_id)]}
        echo = _valid_id(request_id)
        status = 500
        sent = 0

        async def send_wrapper(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                if echo:
                    message["headers"] = [*message.get("headers", ()), (REQUEST_ID_HEADER, request_id)]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        method = scope["method"]
        path = scope["path"]
        if authorization is not None:
            await self._auth.prepare(authorization)  # an OAuth issuer's new key, before any route
        try:
            if traced:
                # The caller's parent read straight from the headers (no pairs built to be read
                # again); none or a malformed one: a new trace. Named by the method alone: paths
                # hold function names, unbounded for a tracing backend. Inline rather than a
                # method of its own: a call less per request.
                parent = (
                    tracing.parse_traceparent(traceparent.decode("latin-1"), tracestate.decode("latin-1"))
                    if traceparent
                    else None
                )
                with tracing.span(method, {"url.path": path}, parent=parent or (), server=True) as span:
                    await self.app(scope, receive, send_wrapper)
                    span.attributes["http.response.status_code"] = status
                    if status >= 500:
                        tracing.mark_failed(span, f"HTTP {status}")
            else:
                await self.app(scope, receive, send_wrapper)
        finally:
            if self.lines is not None:
                self.lines.add(
                    f'{{"ts": {time.time():.6f}, "level": "info", "logger": "toolmesh.access", '
                    f'"msg": "http", "method": {_quote(method)}, "path": {_quote(path[:MAX_LOGGED_PATH])}, '
                    f'"status": {status}, "duration_ms": {(time.perf_counter() - started) * 1000:.3f}, '
                    f'"request_id": {_quote(request_id.decode("latin-1"))}, '
                    f'"principal": {_quote(self._auth.name_of(authorization))}, '
                    f'"bytes_out": {sent}}}\n'
                )

    def flush(self) -> None:
        if self.lines is not None:
            self.lines.flush()
