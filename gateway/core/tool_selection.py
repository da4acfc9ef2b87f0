"""Which of a caller's functions the chat proxy offers a model: the `ToolSelector` seam.

With a large catalog, sending every tool costs tokens and confuses models, so
the proxy asks a selector for the `k` most relevant ones to the latest user
message. `AllTools` is the default and keeps everything; the router's
retrieval plugs in here (`start_gateway(..., selector=...)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

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
