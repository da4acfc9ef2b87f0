"""An MCP server's `tools/call` answers, content items and `_meta` as toolmesh's, for both roads: a
stdio server's pods (mcp_bridge.py) and a remote server's gateway (gateway/sources/remote_mcp/).

Every content kind keeps what it says: text, images and audio, resource links and embedded
resources (`Resource`), with their `annotations` and `_meta`; the answer's `_meta` becomes the
result's. What of a `_meta` passes: everything the server sent but the keys the gateway answers
itself (`OWNED_META`: a progress token, a task the gateway did not start, its own server info),
which would otherwise claim something of the gateway's to its caller.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from toolmesh.runtimes.functions.results import (
    Binary,
    Content,
    Extra,
    Json,
    Resource,
    Text,
    WithContent,
)

#: `_meta` keys the gateway itself owns (the last one is the SDK's `SERVER_INFO_META_KEY`: the
#: pods' side does not import the SDK).
OWNED_META = frozenset(
    {"progressToken", "io.modelcontextprotocol/related-task", "io.modelcontextprotocol/serverInfo"}
)


def passed_meta(meta: Any) -> Extra:
    """What of a server's `_meta` (a tool's, a result's, an item's) passes on; None for nothing."""
    if not isinstance(meta, dict) or not meta:
        return None
    if OWNED_META.isdisjoint(meta):
        return meta
    kept = {key: value for key, value in meta.items() if key not in OWNED_META}
    return kept or None


def _annotations(item: Mapping[str, Any]) -> Extra:
    annotations = item.get("annotations")
    return annotations if isinstance(annotations, dict) and annotations else None


def _optional(item: Mapping[str, Any], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def content_item(item: Mapping[str, Any]) -> Content:
    """One MCP content item; one of a kind toolmesh does not know (or a broken one) is its JSON."""
    kind = item.get("type")
    annotations, meta = _annotations(item), passed_meta(item.get("_meta"))
    if kind == "text":
        return Text(str(item.get("text", "")), annotations, meta)
    try:
        if kind in ("image", "audio"):
            data = base64.b64decode(str(item.get("data", "")), validate=True)
            return Binary(data, str(item.get("mimeType", "")), annotations, meta)
        if kind == "resource_link" and isinstance(item.get("uri"), str):
            size = item.get("size")
            return Resource(
                uri=item["uri"],
                name=_optional(item, "name"),
                title=_optional(item, "title"),
                description=_optional(item, "description"),
                mime_type=_optional(item, "mimeType"),
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
                annotations=annotations,
                meta=meta,
            )
        contents = item.get("resource")
        if kind == "resource" and isinstance(contents, dict) and isinstance(contents.get("uri"), str):
            text, blob = contents.get("text"), contents.get("blob")
            return Resource(
                uri=contents["uri"],
                mime_type=_optional(contents, "mimeType"),
                embedded=True,
                text=text if isinstance(text, str) else None,
                blob=base64.b64decode(blob, validate=True) if isinstance(blob, str) else None,
                annotations=annotations,
                meta=meta,
            )
    except (binascii.Error, ValueError):
        pass
    return Text(json.dumps(item, separators=(",", ":")))


def tool_error(answer: Any) -> str | None:
    """Why a `tools/call` answer failed (its text), or None when it did not."""
    if not isinstance(answer, dict):
        return "the server answered tools/call with no result"
    if not answer.get("isError"):
        return None
    items = answer.get("content") or ()
    texts = [str(i.get("text", "")) for i in items if isinstance(i, dict) and i.get("type") == "text"]
    return "\n".join(texts) or "the tool failed"


def tool_value(answer: dict[str, Any]) -> Any:
    """A successful CallToolResult's JSON as what a toolmesh function returns (see
    runtimes/functions/results.py `normalise`)."""
    items = [content_item(item) for item in answer.get("content") or () if isinstance(item, dict)]
    structured = answer.get("structuredContent")
    meta = passed_meta(answer.get("_meta"))
    # Plain text beside structured content is its JSON (the protocol asks servers for both).
    if structured is not None and all(type(i) is Text and i.annotations is None for i in items):
        if meta is None:
            return structured
        items = [Json.of(structured)]
    if structured is not None or meta is not None:
        # An image, say, that its JSON would turn into base64 text; or a result with a `_meta`.
        return WithContent(structured, items, meta)
    return items or None
