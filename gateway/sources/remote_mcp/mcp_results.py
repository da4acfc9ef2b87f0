"""An MCP server's tools as FunctionSpecs and its `tools/call` answers as Results, from the JSON
on the wire (no SDK models: the gateway passes schemas and content on as the server wrote them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolmesh.gateway.sources.base.naming import selected
from toolmesh.runtimes.functions.results import ErrorInfo, Result, normalise, result_meta
from toolmesh.runtimes.functions.spec import Annotations, FunctionSpec, function_name, name_limit
from toolmesh.runtimes.mcp.mcp_content import passed_meta, tool_error, tool_value


def tool_specs(
    tools: Sequence[Mapping[str, Any]],
    namespace: str,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    taken: set[str] | None = None,
) -> dict[str, tuple[str, FunctionSpec]]:
    """Function name -> (the tool's own name, its spec), for the tools `include`/`exclude` keep.
    A name the mesh cannot carry (dots, too long) or one in `taken` is made one, uniquely."""
    limit = name_limit(namespace)
    taken = set() if taken is None else taken
    found: dict[str, tuple[str, FunctionSpec]] = {}
    for tool in tools:
        raw = str(tool.get("name", ""))
        if not raw or not selected(raw, include, exclude):
            continue
        name = function_name(raw, limit, taken, prefix="op")
        hints = tool.get("annotations") or {}
        schema = tool.get("inputSchema")
        output = tool.get("outputSchema")
        found[name] = (
            raw,
            FunctionSpec(
                name=name,
                description=str(tool.get("description") or tool.get("title") or raw),
                input_schema=dict(schema) if isinstance(schema, dict) else {"type": "object"},
                namespace=namespace,
                output_schema=dict(output) if isinstance(output, dict) else None,
                annotations=Annotations(
                    read_only=bool(hints.get("readOnlyHint")),
                    destructive=bool(hints.get("destructiveHint")),
                    idempotent=bool(hints.get("idempotentHint")),
                    open_world=bool(hints.get("openWorldHint")),
                    title=str(hints.get("title") or tool.get("title") or ""),
                ),
                meta=passed_meta(tool.get("_meta")),
            ),
        )
    return found


def call_result(answer: Any) -> Result:
    """A `tools/call` result (a CallToolResult's JSON) as a Result: as a stdio server's pod makes it."""
    why = tool_error(answer)
    if why is not None:
        return Result.failure(ErrorInfo("function_error", why))
    value = tool_value(answer)
    content, structured = normalise(value)
    return Result(content=content, structured_json=structured, meta=result_meta(value))
