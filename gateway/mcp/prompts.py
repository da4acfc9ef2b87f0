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

from toolmesh.errors import FunctionNotFound, InputRequired, InternalError, ToolmeshError
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.mcp.cache_hints import LIST_TTL_MS, cache_scope
from toolmesh.gateway.mcp.caller import call_feature, call_options, caller, in_namespace, paged, refusal
from toolmesh.gateway.mcp.input_requests import input_required, read_round
from toolmesh.runtimes.functions.asking import pending_asks
from toolmesh.runtimes.functions.spec import PROMPT, FunctionSpec, qualify, tool_name

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


def prompt_name(spec: FunctionSpec) -> str:
    """A prompt's name on MCP: ``<namespace>__<name>`` like a tool's, with the name the MCP server
    behind it gave it when its function's differs (a prompt named like a tool, `Feature.name`)."""
    assert spec.feature is not None
    return tool_name(qualify(spec.namespace, spec.feature.name or spec.name))


def prompt(spec: FunctionSpec) -> types.Prompt:
    assert spec.feature is not None
    return types.Prompt(
        name=prompt_name(spec),
        title=spec.feature.title or None,
        description=spec.description or None,
        arguments=arguments(spec),
    )


def is_prompt(spec: FunctionSpec) -> bool:
    return spec.feature is not None and spec.feature.kind == PROMPT


class Prompts:
    """The prompt methods' handlers, for the SDK's low-level `Server`."""

    def __init__(self, mesh: Mesh, page_size: int, max_rounds: int) -> None:
        self.mesh = mesh
        self.page_size = page_size
        #: Most rounds of questions a prompt that asks its caller may take ([mcp] max_input_rounds).
        self.max_rounds = max_rounds

    def find(self, ctx: ServerRequestContext[Any, Any], name: str) -> FunctionSpec:
        """The prompt `name` the caller may use on this path; -32602 otherwise."""
        principal, namespace = caller(ctx)
        for spec in in_namespace(self.mesh.features(principal), namespace):
            if is_prompt(spec) and prompt_name(spec) == name:
                return spec
        try:  # a prompt's qualified name does as well
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
    ) -> types.GetPromptResult | types.InputRequiredResult:
        spec = self.find(ctx, params.name)
        asked = read_round(ctx)
        options = asked.apply(call_options(ctx))
        result = await call_feature(self.mesh, ctx, spec, dict(params.arguments or {}), options, asking=True)
        if (pending := pending_asks(result)) is not None:
            # A prompt that asks its caller (ctx.elicit...): on 2026-07-28 an input-required result
            # the client answers by asking again; the handshake era's server-to-client requests
            # are served for tools/call only.
            if not asked.modern:
                message = (
                    "this prompt asks its caller, which needs a 2026-07-28 client (input-required results)"
                )
                raise refusal(InputRequired(message))
            answer = input_required(asked, *pending, self.max_rounds)
            if isinstance(answer, types.InputRequiredResult):
                return answer
            raise refusal(InputRequired(answer.error.message if answer.error is not None else answer.text))
        try:
            messages = _MESSAGES.validate_python(result.structured)
        except pydantic.ValidationError as exc:
            problem = InternalError(f"prompt {params.name!r} returned messages MCP cannot hold: {exc}")
            raise refusal(problem) from None
        return types.GetPromptResult(description=spec.description or None, messages=messages)
