"""The router's view of the catalog, and ranking off the event loop.

Embedding a prompt takes milliseconds of onnxruntime work, which must not stall
the event loop's other requests, so ranking runs on one of the router's worker
threads (onnxruntime releases the GIL).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from toolmesh.gateway.core.requests import RouteRequest
from toolmesh.router.routing import RouteResult
from toolmesh.router.service import RouterService
from toolmesh.router.text import Document
from toolmesh.runtimes.functions.spec import FunctionSpec


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
