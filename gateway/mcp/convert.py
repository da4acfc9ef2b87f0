"""Function specs and results as MCP tools and tool results, and tools/list pages.

Transport-free: `mcp_server.py` serves these over Streamable HTTP.

- A tool is `formats.mcp_tool` (named ``ns__name`` like every other format, with
  the spec's hints as annotations). MCP wants an object ``outputSchema``, so a
  function returning a number, a list... gets ``{"result": <its schema>}`` and
  its structured result is wrapped the same way.
- Content items: text as text, JSON as its text (plus ``structuredContent`` when
  the function declares an output schema), binary ``image/*`` and ``audio/*`` as
  image and audio content, other binary as an embedded resource, a `Resource` as a
  ``resource_link`` or (embedded) a ``resource``; each with the ``annotations`` and
  ``_meta`` it came with (from an MCP server behind the gateway), and the result with its ``_meta``.
- A generator's items, while a call runs, are `notifications/progress` (when the client sent a
  progress token) whose message is `progress_message` of the item; the result holds them all.
- Pages are ordered by tool name and the cursor names the last tool of the
  previous page, so any replica can continue a listing, even after the catalog
  changed in between.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

import mcp_types as types

from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.tool_formats import mcp_tool
from toolmesh.gateway.mcp.answers.content_blocks import content_block
from toolmesh.runtimes.functions.results import Content, Json, Result, Text, describe
from toolmesh.runtimes.functions.spec import FunctionSpec, tool_name

#: The property a non-object structured result is wrapped in.
WRAPPED_RESULT = "result"
#: Longest progress message, in characters: a glimpse of the item, not the item (the result has it).
MAX_PROGRESS_MESSAGE = 1000
#: Embedded resources are named ``toolmesh://<tool>/<request id>/<index>``.
RESOURCE_SCHEME = "toolmesh"


def _wraps(spec: FunctionSpec) -> bool:
    return spec.output_schema is not None and spec.output_schema.get("type") != "object"


def _wrapped_schema(schema: dict[str, Any]) -> dict[str, Any]:
    inner = dict(schema)
    # "$ref"s point at "#/$defs/...", so the definitions stay at the document's root.
    defs = inner.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {WRAPPED_RESULT: inner},
        "required": [WRAPPED_RESULT],
    }
    if defs is not None:
        wrapper["$defs"] = defs
    return wrapper


def tool(spec: FunctionSpec) -> types.Tool:
    """The MCP tool for `spec`."""
    definition = mcp_tool(spec)
    if _wraps(spec):
        assert spec.output_schema is not None
        definition["outputSchema"] = _wrapped_schema(spec.output_schema)
    if spec.meta:
        # An MCP server's own (MCP Apps' `ui.resourceUri`, say), for the host to act on.
        definition["_meta"] = spec.meta
    if spec.task_support:
        # 2025-11-25's tool-level negotiation; 2026-07-28 has no such field (its sieve drops it).
        definition["execution"] = {"taskSupport": spec.task_support}
    return types.Tool.model_validate(definition)


def progress_message(item: Content) -> str:
    """What a progress notification says about a streamed item: its text, its JSON, or what it is."""
    if isinstance(item, Text):
        text = item.text
    elif isinstance(item, Json):
        text = item.data.decode()
    else:
        text = describe(item)
    return text if len(text) <= MAX_PROGRESS_MESSAGE else text[: MAX_PROGRESS_MESSAGE - 1] + "…"


def call_result(spec: FunctionSpec, result: Result) -> types.CallToolResult:
    """The MCP result of a call to `spec`: content items, structured content, ``isError``."""
    content: list[types.ContentBlock] = []
    where = f"{RESOURCE_SCHEME}://{tool_name(spec.qualified_name)}/{result.request_id or 'result'}"
    for index, item in enumerate(result.content):
        content.append(content_block(item, f"{where}/{index}"))
    if result.is_error and not content and result.error is not None:
        content.append(types.TextContent(text=result.error.message))
    if result.is_error or spec.output_schema is None or result.structured_json is None:
        return types.CallToolResult(content=content, is_error=result.is_error, meta=result.meta)
    structured = result.structured
    if _wraps(spec):
        structured = {WRAPPED_RESULT: structured}
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=False, meta=result.meta
    )


def _cursor(name: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": name}).encode()).decode()


def _after(cursor: str) -> str:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, binascii.Error, UnicodeError):
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("after"), str):
        raise InvalidRequest("invalid cursor: pass back a nextCursor from tools/list", param="cursor")
    after: str = value["after"]
    return after


def page(
    specs: Sequence[FunctionSpec], cursor: str | None, size: int
) -> tuple[list[FunctionSpec], str | None]:
    """One page of `specs` in tool-name order, and the cursor of the next page (None at the end).

    Raises InvalidRequest for a cursor this function did not write.
    """
    ordered = sorted(specs, key=lambda spec: tool_name(spec.qualified_name))
    if cursor:
        after = _after(cursor)
        ordered = [spec for spec in ordered if tool_name(spec.qualified_name) > after]
    chunk = ordered[:size]
    more = len(ordered) > size
    return chunk, _cursor(tool_name(chunk[-1].qualified_name)) if more else None
