"""Function specs as the tool definitions LLM APIs expect, and as toolmesh's own JSON.

Every format names a function by its tool-name form ("ns__name"), which
satisfies OpenAI's ``^[a-zA-Z0-9_-]{1,64}$`` and converts back exactly.
"""

from __future__ import annotations

import enum
from typing import Any

from toolmesh.errors import InvalidRequest
from toolmesh.runtimes.functions.schema import strict_schema
from toolmesh.runtimes.functions.spec import FunctionSpec, tool_name


class ToolFormat(enum.StrEnum):
    """The tool-definition formats `tool_definition` writes."""

    #: OpenAI Chat Completions: ``{"type": "function", "function": {...}}``.
    OPENAI = "openai"
    #: OpenAI Responses API: a flat ``{"type": "function", "name", ...}``.
    RESPONSES = "responses"
    #: Cloudflare Workers AI: ``{"name", "description", "parameters"}``.
    CLOUDFLARE = "cloudflare"
    #: A Model Context Protocol tool.
    MCP = "mcp"


def parse_tool_format(value: str) -> ToolFormat:
    """The format named `value`; InvalidRequest (param "format") naming the valid ones otherwise."""
    try:
        return ToolFormat(value)
    except ValueError:
        valid = ", ".join(repr(f.value) for f in ToolFormat)
        raise InvalidRequest(f"unknown tool format {value!r}; use one of {valid}", param="format") from None


def openai_tool(spec: FunctionSpec, *, strict: bool = False) -> dict[str, Any]:
    """An OpenAI Chat Completions tool: ``{"type": "function", "function": {...}}``.

    With `strict`, the parameters are the strict-mode subset and ``"strict": true`` is set.
    """
    function: dict[str, Any] = {
        "name": tool_name(spec.qualified_name),
        "description": spec.description,
        "parameters": strict_schema(spec.input_schema) if strict else spec.input_schema,
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def responses_tool(spec: FunctionSpec, *, strict: bool = False) -> dict[str, Any]:
    """An OpenAI Responses API function tool: flat, and always with ``strict``.

    Its reference documents ``strict`` as defaulting to true, so ``false`` is sent explicitly.
    """
    return {
        "type": "function",
        "name": tool_name(spec.qualified_name),
        "description": spec.description,
        "parameters": strict_schema(spec.input_schema) if strict else spec.input_schema,
        "strict": strict,
    }


def cloudflare_tool(spec: FunctionSpec) -> dict[str, Any]:
    """A Cloudflare Workers AI tool: ``{"name", "description", "parameters"}``."""
    return {
        "name": tool_name(spec.qualified_name),
        "description": spec.description,
        "parameters": spec.input_schema,
    }


def mcp_tool(spec: FunctionSpec) -> dict[str, Any]:
    """A Model Context Protocol tool, with the spec's hints as MCP tool annotations.

    MCP requires ``outputSchema`` to be an object schema, so other output schemas
    (a number, a list...) are left out; the MCP adapter wraps such results itself.
    """
    hints = spec.annotations
    annotations: dict[str, Any] = {}
    if hints.title:
        annotations["title"] = hints.title
    annotations |= {
        "readOnlyHint": hints.read_only,
        "destructiveHint": hints.destructive,
        "idempotentHint": hints.idempotent,
        "openWorldHint": hints.open_world,
    }
    tool: dict[str, Any] = {"name": tool_name(spec.qualified_name)}
    if hints.title:
        tool["title"] = hints.title
    tool["description"] = spec.description
    tool["inputSchema"] = spec.input_schema
    if spec.output_schema is not None and spec.output_schema.get("type") == "object":
        tool["outputSchema"] = spec.output_schema
    tool["annotations"] = annotations
    return tool


def tool_definition(spec: FunctionSpec, fmt: ToolFormat | str, *, strict: bool = False) -> dict[str, Any]:
    """`spec` as a tool definition in format `fmt` ("openai", "responses", "cloudflare", "mcp").

    `strict` asks for OpenAI's strict-mode schema and applies to the two OpenAI
    formats only; Cloudflare and MCP have no strict mode, so it is ignored there.
    Raises InvalidRequest (param "format") for an unknown format.
    """
    match parse_tool_format(fmt):
        case ToolFormat.OPENAI:
            return openai_tool(spec, strict=strict)
        case ToolFormat.RESPONSES:
            return responses_tool(spec, strict=strict)
        case ToolFormat.CLOUDFLARE:
            return cloudflare_tool(spec)
        case ToolFormat.MCP:
            return mcp_tool(spec)
