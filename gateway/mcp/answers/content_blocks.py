"""A result's content items as MCP content blocks (convert.py's `call_result` uses these).

Text and JSON are text blocks, `image/*` and `audio/*` bytes image and audio blocks, other bytes
an embedded resource named by the gateway, a `Resource` a ``resource_link`` or an embedded
``resource`` as the MCP server behind the function sent it; every block with the ``annotations``
and ``_meta`` its item came with. Annotations the SDK's model refuses (a priority above 1, say)
are left out rather than failing the whole answer.
"""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types
import pydantic

from toolmesh.runtimes.functions.results import Content, Extra, Json, Resource, Text


def _annotations(value: Extra) -> types.Annotations | None:
    if not value:
        return None
    try:
        return types.Annotations.model_validate(value)
    except pydantic.ValidationError:
        return None


def _extras(item: Content) -> dict[str, Any]:
    """The item's `annotations` and `_meta` as keyword arguments of its block."""
    extras: dict[str, Any] = {}
    if item.annotations:
        extras["annotations"] = _annotations(item.annotations)
    if item.meta:
        extras["meta"] = item.meta
    return extras


def _resource(item: Resource) -> types.ContentBlock:
    if not item.embedded:
        return types.ResourceLink(
            uri=item.uri,
            name=item.name or item.uri,  # MCP requires one
            title=item.title or None,
            description=item.description or None,
            mime_type=item.mime_type or None,
            size=item.size,
            **_extras(item),
        )
    mime_type = item.mime_type or None
    contents: types.TextResourceContents | types.BlobResourceContents
    if item.blob is not None:
        blob = base64.b64encode(item.blob).decode()
        contents = types.BlobResourceContents(uri=item.uri, mime_type=mime_type, blob=blob)
    else:
        contents = types.TextResourceContents(uri=item.uri, mime_type=mime_type, text=item.text or "")
    return types.EmbeddedResource(resource=contents, **_extras(item))


def content_block(item: Content, uri: str) -> types.ContentBlock:
    """`item` as an MCP content block; `uri` names it when it is bytes of no image or audio type."""
    if isinstance(item, Text):
        if item.annotations is None and item.meta is None:
            return types.TextContent(text=item.text)
        return types.TextContent(text=item.text, **_extras(item))
    if isinstance(item, Json):
        return types.TextContent(text=item.data.decode(), **_extras(item))
    if isinstance(item, Resource):
        return _resource(item)
    data = base64.b64encode(item.data).decode()
    kind = item.mime_type.partition("/")[0]
    if kind == "image":
        return types.ImageContent(data=data, mime_type=item.mime_type, **_extras(item))
    if kind == "audio":
        return types.AudioContent(data=data, mime_type=item.mime_type, **_extras(item))
    contents = types.BlobResourceContents(uri=uri, mime_type=item.mime_type, blob=data)
    return types.EmbeddedResource(resource=contents, **_extras(item))
