"""An MCP server's tools as FunctionSpecs and its `tools/call` answers as Results, from the JSON
on the wire (no SDK models: the gateway passes schemas and content on as the server wrote them)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolmesh.gateway.sources.base.naming import selected
from toolmesh.runtimes.functions.results import Binary, Content, ErrorInfo, Json, Result, Text
from toolmesh.runtimes.functions.spec import Annotations, FunctionSpec, function_name, name_limit


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
            ),
        )
    return found


def call_result(answer: Any) -> Result:
    """A `tools/call` result (a CallToolResult's JSON) as a Result."""
    if not isinstance(answer, dict):
        return Result.failure(ErrorInfo("function_error", "the server answered tools/call with no result"))
    items = answer.get("content") or []
    texts = [
        str(item.get("text", "")) for item in items if isinstance(item, dict) and item.get("type") == "text"
    ]
    if answer.get("isError"):
        return Result.failure(ErrorInfo("function_error", "\n".join(texts) or "the tool failed"))
    structured = answer.get("structuredContent")
    if structured is not None:
        data = json.dumps(structured, separators=(",", ":")).encode()
        return Result(content=[Json(data)], structured_json=data)
    return Result(content=[_content(item) for item in items if isinstance(item, dict)])


def _content(item: Mapping[str, Any]) -> Content:
    kind = item.get("type")
    if kind == "text":
        return Text(str(item.get("text", "")))
    if kind in ("image", "audio"):
        try:
            return Binary(
                base64.b64decode(str(item.get("data", "")), validate=True), str(item.get("mimeType", ""))
            )
        except (binascii.Error, ValueError):
            pass
    # Resources and links: their JSON, as the bridge of a stdio server gives them.
    return Text(json.dumps(item, separators=(",", ":")))
