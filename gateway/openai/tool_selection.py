"""Which of a caller's functions the chat proxy offers a model: the `ToolSelector` seam.

With a large catalog, sending every tool costs tokens and confuses models, so
the proxy asks a selector for the `k` most relevant ones to the latest user
message. `AllTools` is the default and keeps everything; the router's
retrieval plugs in here (`start_gateway(..., selector=...)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from toolmesh.errors import Unavailable
from toolmesh.gateway.core.free_text import rank
from toolmesh.gateway.core.requests import RouteRequest
from toolmesh.router.service import RouterService
from toolmesh.runtimes.functions.spec import FunctionSpec


class ToolSelector(Protocol):
    """Picks the functions to offer for a query."""

    async def select(self, query: str, specs: Sequence[FunctionSpec], k: int) -> Sequence[FunctionSpec]:
        """At most `k` of `specs` (which the caller may all call), best first, for `query`."""
        ...


class AllTools:
    """Offers every function, whatever the query: the selector when no router is configured."""

    async def select(self, query: str, specs: Sequence[FunctionSpec], k: int) -> Sequence[FunctionSpec]:
        return specs


class RouterToolSelector:
    """The router's retrieval as a selector: the top-k of the caller's functions for the
    latest user message, or all of them while the router is unavailable."""

    def __init__(self, service: RouterService) -> None:
        self._service = service

    async def select(self, query: str, specs: Sequence[FunctionSpec], k: int) -> Sequence[FunctionSpec]:
        offered = {spec.qualified_name: spec for spec in specs}
        # A chat message is not a prompt to refuse: cut to what the router would read, and
        # lone surrogates (which the tokenizer refuses) replaced, it still picks the tools.
        query = query[: self._service.config.max_prompt_chars].encode(errors="replace").decode()
        try:
            ranked = await rank(self._service, offered.__contains__, RouteRequest(query, k))
        except Unavailable:
            return specs
        return [offered[c.key] for c in ranked.candidates if c.key in offered]
