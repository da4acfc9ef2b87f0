"""Who sent an MCP request and to which path, as the endpoint left it in the ASGI scope.

Shared by the endpoint's handler modules (tools in endpoint.py, resources.py, prompts.py,
completion.py), together with how a toolmesh error becomes the SDK's JSON-RPC error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from toolmesh.error_shapes import jsonrpc_error
from toolmesh.errors import InternalError, ToolmeshError, Unauthenticated
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest
from toolmesh.gateway.core.surfaces import Surface
from toolmesh.gateway.mcp.convert import page
from toolmesh.runtimes.functions.asking import pending_asks
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.functions.spec import FunctionSpec

#: Where the endpoint keeps the caller and the namespace in the ASGI scope's state.
PRINCIPAL = "toolmesh_principal"
NAMESPACE = "toolmesh_namespace"


def refusal(error: ToolmeshError) -> MCPError:
    """`error` as the JSON-RPC error the SDK sends."""
    return MCPError(**jsonrpc_error(error))


def caller(ctx: ServerRequestContext[Any, Any]) -> tuple[Principal, str]:
    """The request's principal and the namespace of its path ("" for `/mcp`)."""
    state: Mapping[str, Any] = ctx.request.scope["state"] if ctx.request is not None else {}
    principal = state.get(PRINCIPAL)
    if not isinstance(principal, Principal):  # only reachable if the SDK is served without the endpoint
        raise refusal(Unauthenticated("the MCP endpoint received a request it did not authenticate"))
    return principal, str(state.get(NAMESPACE, ""))


def call_options(ctx: ServerRequestContext[Any, Any]) -> CallOptions:
    """The request's call options (X-Request-Id, X-Session-Id, timeout...) from its headers."""
    headers = ctx.request.headers if ctx.request is not None else {}
    try:
        return CallOptions.from_headers(headers)
    except ToolmeshError as exc:
        raise refusal(exc) from None


def in_namespace(specs: list[FunctionSpec], namespace: str) -> list[FunctionSpec]:
    return [s for s in specs if s.namespace == namespace] if namespace else specs


async def call_feature(
    mesh: Mesh,
    ctx: ServerRequestContext[Any, Any],
    spec: FunctionSpec,
    arguments: Mapping[str, Any],
    options: CallOptions | None = None,
    *,
    asking: bool = False,
) -> Result:
    """Call the resource, prompt or completion function `spec`; its failure is a JSON-RPC error
    (bad arguments: -32602), since these methods have no error result as tools/call has. With
    `asking`, a result that asks the caller is returned as it is, for the caller to handle."""
    principal, _ = caller(ctx)
    request = InvokeRequest(
        spec.qualified_name, json.dumps(arguments).encode(), options or call_options(ctx), feature=True
    )
    try:
        result = await mesh.invoke(principal, request, Surface.MCP)
    except ToolmeshError as exc:
        raise refusal(exc) from None
    if asking and pending_asks(result) is not None:
        return result
    if result.is_error:
        error = result.error.to_exception() if result.error is not None else InternalError(result.text)
        raise refusal(error)
    return result


def paged(
    specs: list[FunctionSpec], params: types.PaginatedRequestParams | None, size: int
) -> tuple[list[FunctionSpec], str | None]:
    """One page of a list method's answer (see convert.page); a cursor not ours is -32602."""
    try:
        return page(specs, params.cursor if params else None, size)
    except ToolmeshError as exc:
        raise refusal(exc) from None
