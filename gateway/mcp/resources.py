"""resources/list, resources/templates/list, resources/read and (un)subscribe, over functions.

A resource is a function marked `@toolmesh.resource(uri)` (runtimes/functions/features.py):
a plain URI is listed by resources/list, a URI template (``{name}`` parts, RFC 6570 level 1)
by resources/templates/list. A read finds the resource whose URI is the one asked for, else
the first template (in name order) that matches it, and calls the function with the
template's variables as arguments: text and JSON become text contents, bytes a base64 blob.
An unknown URI is the error SEP-2164 asks for: -32602 with the URI in `data`.

Subscriptions, on a stateless gateway: on 2026-07-28 a client subscribes by opening
`subscriptions/listen` with `resourceSubscriptions` and hears `notifications/resources/updated`
there (endpoint.py). The handshake era's resources/subscribe and resources/unsubscribe are
accepted for a known URI and answered `{}`, but with no session there is no stream to send
updates on: those clients re-read.
"""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext

from toolmesh.errors import FunctionNotFound
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.mcp.cache_hints import LIST_TTL_MS, READ_TTL_MS, cache_scope
from toolmesh.gateway.mcp.caller import call_feature, caller, in_namespace, paged, refusal
from toolmesh.runtimes.functions.features import template_variables
from toolmesh.runtimes.functions.results import Binary, Json, Result, Text
from toolmesh.runtimes.functions.spec import RESOURCE, FunctionSpec, tool_name

TEXT = "text/plain"
JSON = "application/json"


def is_template(spec: FunctionSpec) -> bool:
    return spec.feature is not None and bool(template_variables(spec.feature.uri))


def _listed(spec: FunctionSpec) -> dict[str, Any]:
    feature = spec.feature
    assert feature is not None
    return {
        "name": tool_name(spec.qualified_name),
        "title": feature.title or None,
        "description": spec.description or None,
        "mime_type": feature.mime_type or None,
    }


def contents(
    spec: FunctionSpec, uri: str, result: Result
) -> list[types.TextResourceContents | types.BlobResourceContents]:
    """A read's contents: each content item of the function's result, as the resource `uri`."""
    assert spec.feature is not None
    declared = spec.feature.mime_type
    found: list[types.TextResourceContents | types.BlobResourceContents] = []
    for item in result.content:
        if isinstance(item, Text):
            found.append(types.TextResourceContents(uri=uri, mime_type=declared or TEXT, text=item.text))
        elif isinstance(item, Json):
            found.append(
                types.TextResourceContents(uri=uri, mime_type=declared or JSON, text=item.data.decode())
            )
        elif isinstance(item, Binary):
            # Bytes come back as application/octet-stream: what the resource declared says more.
            mime = declared or item.mime_type
            blob = base64.b64encode(item.data).decode()
            found.append(types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob))
    if not found:  # a resource that exists is never read as nothing (SEP-2164)
        found.append(types.TextResourceContents(uri=uri, mime_type=declared or TEXT, text=""))
    return found


class Resources:
    """The resource methods' handlers, for the SDK's low-level `Server`."""

    def __init__(self, mesh: Mesh, page_size: int) -> None:
        self.mesh = mesh
        self.page_size = page_size

    def _resources(self, ctx: ServerRequestContext[Any, Any]) -> list[FunctionSpec]:
        principal, namespace = caller(ctx)
        specs = in_namespace(self.mesh.features(principal), namespace)
        return [s for s in specs if s.feature is not None and s.feature.kind == RESOURCE]

    def _scope(self) -> str:
        return cache_scope(self.mesh.auth.open)

    def _page(
        self, specs: list[FunctionSpec], params: types.PaginatedRequestParams | None
    ) -> tuple[list[FunctionSpec], str | None]:
        return paged(specs, params, self.page_size)

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        chunk, cursor = self._page([s for s in self._resources(ctx) if not is_template(s)], params)
        listed = [types.Resource(uri=s.feature.uri, **_listed(s)) for s in chunk if s.feature is not None]
        return types.ListResourcesResult(
            resources=listed, next_cursor=cursor, ttl_ms=LIST_TTL_MS, cache_scope=self._scope()
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        chunk, cursor = self._page([s for s in self._resources(ctx) if is_template(s)], params)
        listed = [
            types.ResourceTemplate(uri_template=s.feature.uri, **_listed(s))
            for s in chunk
            if s.feature is not None
        ]
        return types.ListResourceTemplatesResult(
            resource_templates=listed, next_cursor=cursor, ttl_ms=LIST_TTL_MS, cache_scope=self._scope()
        )

    def find(self, ctx: ServerRequestContext[Any, Any], uri: str) -> tuple[FunctionSpec, dict[str, str]]:
        """The resource serving `uri` and the arguments to read it with; -32602 when none does."""
        principal, namespace = caller(ctx)
        try:
            return self.mesh.resource(principal, uri, namespace)
        except FunctionNotFound as exc:
            raise refusal(exc) from None

    async def read(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        spec, arguments = self.find(ctx, uri)  # on this path (/mcp/{namespace}) only
        result = await call_feature(self.mesh, ctx, spec, arguments)
        return types.ReadResourceResult(
            contents=contents(spec, uri, result), ttl_ms=READ_TTL_MS, cache_scope=self._scope()
        )

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.find(ctx, str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        return types.EmptyResult()
