"""Results: the content items a function produces and how return values become them.

A function may return anything; `normalise` turns it into a list of content
items plus, for JSON-like values, the structured result:

    None                          -> no content
    str                           -> Text
    bytes                         -> Binary (application/octet-stream)
    Text / Json / Binary /
    Resource                      -> that item; a list of them -> the list as is
    WithContent                   -> its content, and its structured value as structured output
                                     (and its `meta` the result's: `result_meta`)
    dict, list, numbers, bool,
    pydantic models, dataclasses  -> Json, and the same value as structured output

Every item may carry MCP's `annotations` (audience, priority, lastModified) and `_meta` as the
MCP server that made it sent them (a dict each, or None): the doors pass them on.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from toolmesh.errors import ToolmeshError, Violation, from_code

#: An item's or a result's MCP `annotations` or `_meta`: a JSON object, or None.
Extra = dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Text:
    """A text content item."""

    text: str
    annotations: Extra = None
    meta: Extra = None


@dataclass(frozen=True, slots=True)
class Json:
    """A JSON content item, kept as its UTF-8 encoding so it is serialised once."""

    data: bytes
    annotations: Extra = None
    meta: Extra = None

    @classmethod
    def of(cls, value: Any) -> Json:
        return cls(pydantic_core.to_json(value))

    @property
    def value(self) -> Any:
        return json.loads(self.data)


@dataclass(frozen=True, slots=True)
class Binary:
    """Bytes with a media type: an image, audio, a PDF..."""

    data: bytes
    mime_type: str = "application/octet-stream"
    annotations: Extra = None
    meta: Extra = None


@dataclass(frozen=True, slots=True)
class Resource:
    """An MCP resource in a result: a link (`resource_link`: the caller reads `uri` itself) or,
    when `embedded`, the resource's contents (`text`, or `blob` bytes). A link has a `name`
    and may have the rest; an embedded resource's are its URI, media type and contents."""

    uri: str
    name: str = ""
    title: str = ""
    description: str = ""
    mime_type: str = ""
    size: int | None = None
    embedded: bool = False
    text: str | None = None
    blob: bytes | None = None
    annotations: Extra = None
    meta: Extra = None


Content = Text | Json | Binary | Resource
CONTENT_TYPES = (Text, Json, Binary, Resource)


@dataclass(frozen=True, slots=True)
class WithContent:
    """A structured result and the content items that show it, when its JSON would not: a stdio
    MCP server's answer with an image and the same image described in `structuredContent`."""

    structured: Any
    content: Sequence[Content]
    #: The result's MCP `_meta` (a JSON object), for the MCP server's answer that had one.
    meta: Extra = None


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """Why a call failed. `code` is one of the stable codes of toolmesh.errors."""

    code: str
    message: str
    violations: tuple[Violation, ...] = ()
    traceback: str = ""
    retryable: bool = False

    @classmethod
    def from_exception(cls, exc: ToolmeshError) -> ErrorInfo:
        violations = tuple(getattr(exc, "violations", ()))
        return cls(exc.code, exc.message, violations, retryable=exc.retryable)

    def to_exception(self) -> ToolmeshError:
        """The toolmesh error this describes, e.g. to raise it in a caller."""
        details = {"violations": [v.to_dict() for v in self.violations]} if self.violations else None
        return from_code(self.code, self.message, details=details)


@dataclass(slots=True)
class Result:
    """The outcome of one call: content for a model, structured output for code."""

    content: list[Content] = field(default_factory=list)
    is_error: bool = False
    #: The structured result as UTF-8 JSON, or None.
    structured_json: bytes | None = None
    error: ErrorInfo | None = None
    queued_ms: float = 0.0
    duration_ms: float = 0.0
    request_id: str = ""
    #: The stored outcome of an earlier call with the same `Idempotency-Key`, not a new run.
    replayed: bool = False
    #: The result's MCP `_meta` as the MCP server behind the function sent it (a JSON object), or None.
    meta: Extra = None

    @classmethod
    def failure(cls, error: ErrorInfo) -> Result:
        """An error result whose content explains the error (so a model can read it)."""
        text = error.message
        if error.violations:
            text += "".join(f"\n- {v.message}" for v in error.violations)
        return cls(content=[Text(text)], is_error=True, error=error)

    @property
    def structured(self) -> Any:
        return None if self.structured_json is None else json.loads(self.structured_json)

    @property
    def text(self) -> str:
        """All text and JSON items joined by newlines (what a model would read)."""
        parts = []
        for item in self.content:
            if isinstance(item, Text):
                parts.append(item.text)
            elif isinstance(item, Json):
                parts.append(item.data.decode())
        return "\n".join(parts)

    @property
    def value(self) -> Any:
        """The structured result when there is one, else the text."""
        return self.structured if self.structured_json is not None else self.text


def _is_content_list(value: object) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) > 0
        and all(isinstance(item, CONTENT_TYPES) for item in value)
    )


def normalise(value: Any) -> tuple[list[Content], bytes | None]:
    """Content items and structured JSON for a return (or yielded) value.

    Raises TypeError when the value cannot be represented as JSON.
    """
    if value is None:
        return [], None
    if isinstance(value, str):
        return [Text(value)], None
    if isinstance(value, bytes | bytearray | memoryview):
        return [Binary(bytes(value))], None
    if isinstance(value, CONTENT_TYPES):
        return [value], None
    if _is_content_list(value):
        return list(value), None
    if isinstance(value, WithContent):
        return list(value.content), normalise(value.structured)[1]
    try:
        data = pydantic_core.to_json(value)
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(f"the function returned a {type(value).__name__}, which is not JSON: {exc}") from None
    return [Json(data)], data


def result_meta(value: Any) -> Extra:
    """The result `_meta` a return value carries (a `WithContent`'s), or None."""
    return value.meta if isinstance(value, WithContent) else None


def describe(item: Binary | Resource) -> str:
    """A line saying what bytes or a resource are, for a reader of text (a model, a progress
    message): ``image/png, 1234 bytes``, ``resource_link file:///a.txt (a.txt, text/plain)``,
    an embedded resource's text (or ``resource <uri> (<type>, <n> bytes)``)."""
    if isinstance(item, Binary):
        return f"{item.mime_type}, {len(item.data)} bytes"
    if item.embedded:
        if item.text is not None:
            return item.text
        return f"resource {item.uri} ({item.mime_type or 'bytes'}, {len(item.blob or b'')} bytes)"
    said = [s for s in (item.title or item.name, item.mime_type, item.description) if s]
    return f"resource_link {item.uri}" + (f" ({', '.join(said)})" if said else "")


def content_bytes(content: Sequence[Content]) -> int:
    """The size of `content` on the wire, near enough to hold it to a limit (the protobuf
    framing adds a few bytes per item)."""
    total = 0
    for item in content:
        if isinstance(item, Text):
            text = item.text
            total += len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        elif isinstance(item, Json | Binary):
            total += len(item.data)
        elif isinstance(item, Resource):
            total += len(item.uri) + len(item.text or "") + len(item.blob or b"")
    return total


# -- results from their JSON document (HTTP answers, job results) -----------------------------


def _compact(value: Any) -> bytes:
    """The JSON encoding runtimes produce (compact UTF-8), so results match the gRPC path byte for byte."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _object(item: Mapping[str, Any], key: str) -> Extra:
    value = item.get(key)
    return value if isinstance(value, dict) and value else None


def content_from_document(item: Mapping[str, Any]) -> Content:
    """A content item from its JSON document (`content` of what gateway/core/result_json.py writes)."""
    kind = item["type"]
    annotations, meta = _object(item, "annotations"), _object(item, "meta")
    if kind == "text":
        return Text(item["text"], annotations, meta)
    if kind == "json":
        return Json(_compact(item["json"]), annotations, meta)
    if kind == "binary":
        data = base64.b64decode(item["data"])
        return Binary(data, item.get("mime_type") or "application/octet-stream", annotations, meta)
    if kind in ("resource_link", "resource"):
        blob = item.get("blob")
        return Resource(
            uri=item["uri"],
            name=item.get("name") or "",
            title=item.get("title") or "",
            description=item.get("description") or "",
            mime_type=item.get("mime_type") or "",
            size=item.get("size"),
            embedded=kind == "resource",
            text=item.get("text"),
            blob=None if blob is None else base64.b64decode(blob),
            annotations=annotations,
            meta=meta,
        )
    raise ValueError(f"unknown content type {kind!r}")


def _error_info(error: Mapping[str, Any]) -> ErrorInfo:
    code = str(error["code"])
    violations = tuple(
        Violation(str(v["path"]), str(v["expected"]), str(v["got"]), str(v["message"]))
        for v in error.get("violations") or ()
    )
    # The HTTP shape has no `retryable`; it is a property of the error's class.
    retryable = from_code(code, "").retryable
    return ErrorInfo(
        code, str(error.get("message") or ""), violations, error.get("traceback") or "", retryable
    )


def result_from_document(body: Mapping[str, Any]) -> Result:
    """A `Result` from the JSON `result_json` writes."""
    structured = body.get("structured")
    error = body.get("error")
    timing = body.get("timing") or {}
    return Result(
        content=[content_from_document(item) for item in body.get("content") or ()],
        is_error=bool(body.get("is_error")),
        structured_json=None if structured is None else _compact(structured),
        error=None if error is None else _error_info(error),
        queued_ms=float(timing.get("queued_ms") or 0.0),
        duration_ms=float(timing.get("duration_ms") or 0.0),
        request_id=str(body.get("request_id") or ""),
        meta=_object(body, "meta"),
    )
