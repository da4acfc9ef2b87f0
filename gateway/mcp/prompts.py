"""prompts/list and prompts/get, over functions marked `@toolmesh.prompt`.

A prompt's arguments are its function's parameters (their docstring descriptions, required
when they have no default). prompts/get calls the function; the pod has already turned what
it returned into MCP prompt messages (runtimes/functions/features.py), which are checked
here. Arguments arrive as strings, as MCP sends them.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pydantic
from mcp.server import ServerRequestContext

from toolmesh.errors import FunctionNotFound, InternalError, ToolmeshError
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.mcp.cache_hints import LIST_TTL_MS, cache_scope
from toolmesh.gateway.mcp.caller import call_feature, caller, in_namespace, paged, refusal
from toolmesh.runtimes.functions.spec import PROMPT, FunctionSpec, tool_name

_MESSAGES = pydantic.TypeAdapter(list[types.PromptMessage])


def arguments(spec: FunctionSpec) -> list[types.PromptArgument]:
    """The prompt's arguments, from its function's input schema."""
    properties: dict[str, Any] = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", ()))
    return [
        types.PromptArgument(
            name=name, description=prop.get("description") or None, required=name in required
        )
        for name, prop in properties.items()
    ]


def prompt(spec: FunctionSpec) -> types.Prompt:
    assert spec.feature is not None
    return types.Prompt(
        name=tool_name(spec.qualified_name),
        title=spec.feature.title or None,
        description=spec.description or None,
        arguments=arguments(spec),
    )


def is_prompt(spec: FunctionSpec) -> bool:
    return spec.feature is not None and spec.feature.kind == PROMPT


class Prompts:
    """The prompt methods' handlers, for the SDK's low-level `Server`."""

    def __init__(self, mesh: Mesh, page_size: int) -> None:
        self.mesh = mesh
        self.page_size = page_size

    def find(self, ctx: ServerRequestContext[Any, Any], name: str) -> FunctionSpec:
        """The prompt `name` the caller may use on this path; -32602 otherwise."""
        principal, namespace = caller(ctx)
        try:
            spec = self.mesh.function(name, principal, feature=True)
            if not is_prompt(spec) or (namespace and spec.namespace != namespace):
                raise FunctionNotFound(f"no prompt {name!r}")
        except ToolmeshError as exc:
            raise refusal(exc) from None
        return spec

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        principal, namespace = caller(ctx)
        specs = [s for s in in_namespace(self.mesh.features(principal), namespace) if is_prompt(s)]
        chunk, cursor = paged(specs, params, self.page_size)
        return types.ListPromptsResult(
            prompts=[prompt(s) for s in chunk],
            next_cursor=cursor,
            ttl_ms=LIST_TTL_MS,
            cache_scope=cache_scope(self.mesh.auth.open),
        )

    async def get(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        spec = self.find(ctx, params.name)
        result = await call_feature(self.mesh, ctx, spec, dict(params.arguments or {}))
        try:
            messages = _MESSAGES.validate_python(result.structured)
        except pydantic.ValidationError as exc:
            problem = InternalError(f"prompt {params.name!r} returned messages MCP cannot hold: {exc}")
            raise refusal(problem) from None
        return types.GetPromptResult(description=spec.description or None, messages=messages)
