"""Results: the content items a function produces and how return values become them.

A function may return anything; `normalise` turns it into a list of content
items plus, for JSON-like values, the structured result:

    None                          -> no content
    str                           -> Text
    bytes                         -> Binary (application/octet-stream)
    Text / Json / Binary          -> that item; a list of them -> the list as is
    WithContent                   -> its content, and its structured value as structured output
    dict, list, numbers, bool,
    pydantic models, dataclasses  -> Json, and the same value as structured output
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from toolmesh.errors import ToolmeshError, Violation, from_code


@dataclass(frozen=True, slots=True)
class Text:
    """A text content item."""

    text: str


@dataclass(frozen=True, slots=True)
class Json:
    """A JSON content item, kept as its UTF-8 encoding so it is serialised once."""

    data: bytes

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


Content = Text | Json | Binary
CONTENT_TYPES = (Text, Json, Binary)


@dataclass(frozen=True, slots=True)
class WithContent:
    """A structured result and the content items that show it, when its JSON would not: a stdio
    MCP server's answer with an image and the same image described in `structuredContent`."""

    structured: Any
    content: Sequence[Content]


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
    return total


# -- results from their JSON document (HTTP answers, job results) -----------------------------


def _compact(value: Any) -> bytes:
    """The JSON encoding runtimes produce (compact UTF-8), so results match the gRPC path byte for byte."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def content_from_document(item: Mapping[str, Any]) -> Content:
    """A content item from its JSON document (`content` of what gateway/core/result_json.py writes)."""
    kind = item["type"]
    if kind == "text":
        return Text(item["text"])
    if kind == "json":
        return Json(_compact(item["json"]))
    if kind == "binary":
        return Binary(base64.b64decode(item["data"]), item.get("mime_type") or "application/octet-stream")
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
    )
