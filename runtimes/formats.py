"""Function specs as the tool definitions LLM APIs expect."""

from __future__ import annotations

from typing import Any

from toolmesh.runtimes.schema import strict_schema
from toolmesh.runtimes.spec import FunctionSpec, tool_name


def spec_to_dict(spec: FunctionSpec) -> dict[str, Any]:
    """toolmesh's own JSON form of a spec (what `GET /v1/functions` returns)."""
    annotations = spec.annotations
    return {
        "name": spec.qualified_name,
        "namespace": spec.namespace,
        "description": spec.description,
        "parameters": spec.input_schema,
        "output_schema": spec.output_schema,
        "annotations": {
            "read_only": annotations.read_only,
            "destructive": annotations.destructive,
            "idempotent": annotations.idempotent,
            "open_world": annotations.open_world,
            "title": annotations.title,
        },
        "timeout": spec.timeout,
        "streaming": spec.streaming,
        "version": spec.version,
    }


def openai_tool(spec: FunctionSpec, *, strict: bool = False) -> dict[str, Any]:
    """An OpenAI Chat Completions tool: ``{"type": "function", "function": {...}}``.

    The name is the tool-name form of the qualified name ("ns__name"), which
    satisfies OpenAI's ``^[a-zA-Z0-9_-]{1,64}$``.
    """
    function: dict[str, Any] = {
        "name": tool_name(spec.qualified_name),
        "description": spec.description,
        "parameters": strict_schema(spec.input_schema) if strict else spec.input_schema,
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}
