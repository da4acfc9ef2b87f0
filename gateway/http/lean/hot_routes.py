"""The hottest routes (a call's invoke, MCP's POSTs) served straight from the ASGI entry.

Starlette sends every request through its ServerErrorMiddleware, the `BrowserGuard`, its
ExceptionMiddleware, the router's walk over every route, and `request_response`, each with a
`send` wrapper of its own. Profiled on a no-op invoke (py-spy, h2load c=16), those layers and
the route walk were the bulk of what the gateway did besides the call itself. `HotRoutes` sits
in front of the Starlette app: a request for one of a few routes gets the same checks in one
place and goes to the same endpoint, with the app's own exception handlers; everything else
(and every request with an ``Origin``, which CORS may have to answer) takes the full app,
unchanged.

Nothing is skipped: the `BrowserGuard` checks run (a request it refuses takes the full app, which
refuses it the same way), errors are rendered by the same handlers (an unexpected one is also
re-raised, as Starlette's ServerErrorMiddleware does, so the server logs it), and the request's
log line, id and span come from `RequestLog` around both paths.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolmesh.errors import ToolmeshError
from toolmesh.gateway.http.guards.browser_guard import BrowserGuard
from toolmesh.gateway.http.lean.headers import IndexedHeaders

Handler = Callable[[Request, Exception], Awaitable[Response]]


@dataclass(frozen=True)
class HotRoute:
    """`path` as Starlette writes it (``/v1/functions/{name}/invoke``), for one method."""

    path: str
    method: str
    app: ASGIApp

    def pattern(self) -> re.Pattern[str]:
        # Starlette's default convertor: a {param} is one segment, non-empty.
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path) + "$")


class Endpoint:
    """A request handler as an ASGI app that lets its errors out (for `HotRoutes` to render).
    `HotRoutes` calls its `handler` itself, without the ASGI wrapping."""

    def __init__(self, handler: Callable[[Request], Awaitable[Response]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handler(Request(scope, receive, send))
        await response(scope, receive, send)


def endpoint(handler: Callable[[Request], Awaitable[Response]]) -> Endpoint:
    """`handler` as an ASGI app for a `HotRoute`."""
    return Endpoint(handler)


class HotRoutes:
    """ASGI app: `routes` served straight, with `app`'s checks and handlers; the rest by `app`."""

    def __init__(
        self,
        app: Starlette,
        guard: BrowserGuard,
        routes: Sequence[HotRoute],
        handlers: Mapping[Any, Handler],
    ) -> None:
        self.app = app
        self._guard = guard
        self._exact: dict[tuple[str, str], ASGIApp] = {}
        self._patterns: list[tuple[str, re.Pattern[str], ASGIApp]] = []
        for route in routes:
            if "{" in route.path:
                self._patterns.append((route.method, route.pattern(), route.app))
            else:
                self._exact[(route.method, route.path)] = route.app
        self._handlers = {key: value for key, value in handlers.items() if key is not Exception}
        self._unexpected = handlers.get(Exception)
        # What Starlette's ExceptionMiddleware puts in the scope, for endpoints that read it.
        self._scope_handlers: tuple[dict[Any, Handler], dict[int, Handler]] = (self._handlers, {})

    @property
    def routes(self) -> list[BaseRoute]:
        """Every route served, hot or not: the Starlette app's."""
        return self.app.routes

    def _match(self, scope: Scope) -> tuple[ASGIApp, dict[str, str]] | None:
        method, path = scope["method"], scope["path"]
        found = self._exact.get((method, path))
        if found is not None:
            return found, {}
        for wanted, pattern, app in self._patterns:
            if wanted == method and (match := pattern.match(path)) is not None:
                return app, match.groupdict()
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot = self._match(scope) if scope["type"] == "http" and not scope.get("root_path") else None
        if hot is None:
            await self.app(scope, receive, send)
            return
        headers = IndexedHeaders(scope)
        if "origin" in headers:  # CORS may have to add to the answer: the full app's job
            await self.app(scope, receive, send)
            return
        try:
            self._guard.check(headers, scope["method"])
        except ToolmeshError:
            await self.app(scope, receive, send)  # which refuses it, in its own words
            return
        scope["app"] = self.app
        scope["path_params"] = hot[1]
        scope["starlette.exception_handlers"] = self._scope_handlers
        if isinstance(hot[0], Endpoint):
            await self._respond(hot[0].handler, headers, scope, receive, send)
        else:
            await self._serve(hot[0], scope, receive, send)

    async def _respond(
        self,
        handler: Callable[[Request], Awaitable[Response]],
        headers: Headers,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """`handler`'s answer, without the ASGI app around it: nothing is sent before it returns,
        so its errors are rendered as `_serve` renders those raised before the answer started."""
        request = Request(scope, receive, send)
        request._headers = headers  # looked up once, by the guard's check and the handler alike
        try:
            response = await handler(request)
        except Exception as exc:
            handler_of = self._handler(exc)
            if handler_of is None:
                if self._unexpected is not None:
                    response = await self._unexpected(Request(scope), exc)
                    await response(scope, receive, send)
                raise  # as Starlette's ServerErrorMiddleware: the server logs it
            response = await handler_of(Request(scope, receive), exc)
            await response(scope, receive, send)
            exc.__traceback__ = None
            return
        if type(response) is Response and response.background is None:
            # Two messages, as `Response.__call__` sends them; only the transport can fail here,
            # which `_serve` would let out as well.
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": response.raw_headers,
                }
            )
            await send({"type": "http.response.body", "body": response.body})
        else:  # a stream, a background task: errors while answering as `_serve` treats them
            await self._serve(response, scope, receive, send)

    async def _serve(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sender(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, receive, sender)
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                if self._unexpected is not None and not started:
                    response = await self._unexpected(Request(scope), exc)
                    await response(scope, receive, send)
                raise  # as Starlette's ServerErrorMiddleware: the server logs it
            if started:
                raise RuntimeError("Caught handled exception, but response already started.") from exc
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, sender)
            exc.__traceback__ = None

    def _handler(self, exc: Exception) -> Handler | None:
        if isinstance(exc, HTTPException) and exc.status_code in self._handlers:
            return self._handlers[exc.status_code]
        for cls in type(exc).__mro__:
            if cls in self._handlers:
                return self._handlers[cls]
        return None
