"""Free text in the gateway: the router's view of the catalog, ranking off the event loop, and
which free-text calls run at once.

Embedding a prompt takes milliseconds of onnxruntime work, which must not stall
the event loop's other requests, so ranking runs on one of the router's worker
threads (onnxruntime releases the GIL).

On `/v1/execute` (and gRPC `Execute`, and the console) the router, not a client, chose the
function, and it can be wrong. So only a function that says it changes nothing (`read_only`)
runs at once; any other is answered with the planned call and a confirmation to send back
(gateway/state/confirmations.py), unless its `free_text` policy, set in its decorator or its
runtime's config, says otherwise (runtimes/functions/spec.py FREE_TEXT_POLICIES). MCP, the
OpenAI formats and direct invokes are not free text: there a client chose the function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from toolmesh.gateway.core.requests import RouteRequest
from toolmesh.router.routing import RouteResult
from toolmesh.router.search.text import Document
from toolmesh.router.service import RouterService
from toolmesh.runtimes.functions.spec import (
    FREE_TEXT_CONFIRM,
    FREE_TEXT_NEVER,
    FREE_TEXT_RUN,
    FunctionSpec,
)


def spec_document(spec: FunctionSpec) -> Document:
    """The router's view of a catalog function."""
    return Document(
        key=spec.qualified_name,
        name=spec.name,
        namespace=spec.namespace,
        description=spec.description,
        parameters=spec.input_schema,
        examples=spec.examples,
        read_only=spec.annotations.read_only,
        destructive=spec.annotations.destructive,
    )


def spec_documents(specs: Iterable[FunctionSpec]) -> list[Document]:
    return [spec_document(spec) for spec in specs]


async def rank(service: RouterService, allowed: Callable[[str], bool], request: RouteRequest) -> RouteResult:
    """The functions `allowed` lets through, best first for the prompt, in a worker thread."""
    router = service.router()
    k = request.k or service.config.k
    route = functools.partial(router.route, request.prompt, k, session_id=request.session_id, allowed=allowed)
    return await service.in_worker(route)


#: An argument's source when it was carried from the session's previous call.
CARRIED = "previous"


@dataclass(frozen=True, slots=True)
class Verdict:
    """`confirm`: the call waits for a confirmation, for `reason`; `never`: it may not run
    from free text at all."""

    confirm: bool
    reason: str = ""
    never: bool = False
    destructive: bool = False


def verdict(spec: FunctionSpec, sources: Mapping[str, str]) -> Verdict:
    """What free text may do with a planned call of `spec` whose arguments came from `sources`."""
    hints = spec.annotations
    name = spec.qualified_name
    destructive = hints.destructive and not hints.read_only
    if hints.free_text == FREE_TEXT_NEVER:
        reason = f"{name} never runs from free text (free_text='never'): call it directly"
        return Verdict(True, reason, never=True, destructive=destructive)
    if hints.free_text == FREE_TEXT_RUN:
        return Verdict(False, destructive=destructive)
    carried = carried_arguments(sources)
    note = f"; {', '.join(carried)} carried over from the session's previous call" if carried else ""
    if hints.free_text == FREE_TEXT_CONFIRM:
        reason = f"{name} asks for a confirmation before it runs from free text{note}"
        return Verdict(True, reason, destructive=destructive)
    if hints.read_only:
        return Verdict(False)
    if destructive:
        return Verdict(
            True, f"{name} is destructive: it may delete or overwrite data{note}", destructive=True
        )
    return Verdict(True, f"{name} is not read-only: it may change data{note}")


def carried_arguments(sources: Mapping[str, str]) -> list[str]:
    """The arguments a follow-up took from the session rather than from its own prompt."""
    return [name for name, source in sources.items() if source == CARRIED]
