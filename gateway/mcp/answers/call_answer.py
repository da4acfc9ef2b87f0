"""The bytes of a tools/call answer, as the SDK writes them, for the fast path (../direct_calls.py).

The SDK shapes a result in four steps: the endpoint's `CallToolResult` (convert.py's `call_result`),
its dump, the revision's surface model (`serialize_server_result`: validated again, dumped again,
keys in the surface's order), a `JSONRPCResponse` (validated, then dumped a third time).
Profiled on a no-op call that chain was about a sixth of the gateway's CPU per MCP call. For the
results that are only text (every `Text` and `Json` item, an error's message; no structured
content, no binary items or resources, no annotations or `_meta`) its output is fixed and small,
so `CallAnswers` writes it directly:

    2025-11-25  {"jsonrpc":"2.0","id":ID,"result":{"content":[{"text":T,"type":"text"},...],
                "isError":B}}                        pydantic's JSON (non-ASCII kept), one SSE frame
    2026-07-28  {"jsonrpc":"2.0","id":ID,"result":{"content":[...],"isError":B,
                "resultType":"complete","_meta":{SERVER_INFO}}}   json.dumps (ASCII), one JSON body

and any other result takes the SDK's chain (`sdk_answer`), as does one whose text cannot be
encoded (a lone surrogate: the chain's own error is the one raised). tests/gateway/mcp compares the
two byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types
import pydantic_core
from mcp_types import SERVER_INFO_META_KEY
from mcp_types import methods as _methods

from toolmesh.runtimes.functions.results import Json, Result, Text
from toolmesh.runtimes.functions.spec import FunctionSpec

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
#: The SDK's event-stream answer (sse-starlette's EventSourceResponse with the transport's headers).
SSE_HEADERS = [
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
    (b"x-accel-buffering", b"no"),
]


def _texts(result: Result) -> list[str] | None:
    """The result's content as `call_result` makes it, when it is only text; else None."""
    if result.structured_json is not None and not result.is_error:
        return None  # structured content (when the function declares an output schema)
    if result.meta is not None:
        return None
    texts: list[str] = []
    for item in result.content:
        # Another kind, or an MCP server's annotations or `_meta`, takes the SDK's chain.
        if type(item) is Text and item.annotations is None and item.meta is None:
            texts.append(item.text)
        elif type(item) is Json and item.annotations is None and item.meta is None:
            texts.append(item.data.decode())
        else:
            return None
    if result.is_error and not texts and result.error is not None:
        texts.append(result.error.message)
    return texts


#: How the endpoint makes a call's MCP result (convert.py's `call_result`).
Shape = Callable[[FunctionSpec, Result], types.CallToolResult]


class CallAnswers:
    """Writes answers for one endpoint: `server_info` is its server's identity (fixed once built),
    `shape` how it makes a call's MCP result (the SDK's chain starts there)."""

    def __init__(self, server_info: Callable[[], dict[str, Any]], shape: Shape) -> None:
        self._server_info = server_info
        self._shape = shape
        self._modern_tail: str | None = None

    def handshake_frame(self, request_id: Any, spec: FunctionSpec, result: Result) -> bytes:
        """A 2025-11-25 answer: the SSE frame the SDK's transport writes."""
        texts = _texts(result) if type(request_id) in (int, str) else None
        data: bytes | None = None
        if texts is not None:
            content = [{"text": text, "type": "text"} for text in texts]
            document = {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": content, "isError": result.is_error},
            }
            try:
                data = pydantic_core.to_json(document)
            except pydantic_core.PydanticSerializationError:
                data = None
        if data is None:
            data = self._sdk_data(request_id, spec, result, HANDSHAKE).encode()
        return b"event: message\r\ndata: " + data + b"\r\n\r\n"

    def modern_body(self, request_id: Any, spec: FunctionSpec, result: Result) -> bytes:
        """A 2026-07-28 answer: the JSON body the SDK's transport writes."""
        texts = _texts(result) if type(request_id) in (int, str) else None
        if texts is None:
            return self._sdk_data(request_id, spec, result, MODERN).encode()
        if self._modern_tail is None:
            meta = {SERVER_INFO_META_KEY: self._server_info()}
            self._modern_tail = ',"resultType":"complete","_meta":' + _dumps(meta) + "}}"
        content = ",".join('{"text":' + json.dumps(text) + ',"type":"text"}' for text in texts)
        head = '{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"result":{"content":['
        encoded = head + content + '],"isError":' + ("true" if result.is_error else "false")
        return (encoded + self._modern_tail).encode()

    def _sdk_data(self, request_id: Any, spec: FunctionSpec, result: Result, version: str) -> str:
        # As the SDK's runner shapes a result (`_serialize`) and its transports frame it.
        dumped = self._shape(spec, result).model_dump(by_alias=True, mode="json", exclude_none=True)
        wire = _methods.serialize_server_result("tools/call", version, dumped)
        if version != MODERN:
            message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=wire)
            return message.model_dump_json(by_alias=True, exclude_unset=True)
        if wire.get("resultType") is None:
            wire["resultType"] = "complete"
        meta = wire.get("_meta")
        if meta is None:
            wire["_meta"] = {SERVER_INFO_META_KEY: self._server_info()}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            wire["_meta"] = {**meta, SERVER_INFO_META_KEY: self._server_info()}
        message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=wire)
        return _dumps(message.model_dump(mode="json", by_alias=True, exclude_none=True))


def _dumps(document: Any) -> str:
    return json.dumps(document, separators=(",", ":"))
