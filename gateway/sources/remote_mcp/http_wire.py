"""The wire of Streamable HTTP as the gateway reads it: the JSON-RPC messages of an event stream,
a response's outcome, header values, and the two ways a request fails."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx

log = logging.getLogger("toolmesh.sources")


class McpHttpError(Exception):
    """The server could not be reached or answered outside the protocol; `status`, the HTTP status
    of the answer that said so, if any (how `transport = "auto"` tells an HTTP+SSE server)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class McpRpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


async def event_messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of `response`'s event stream, as they come."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            text, data = "\n".join(data), []
            try:
                message = json.loads(text)
            except ValueError:
                log.warning("an MCP server sent an event that is not JSON: %.200s", text)
                continue
            if isinstance(message, dict):
                yield message


def outcome(answer: dict[str, Any]) -> Any:
    error = answer.get("error")
    if isinstance(error, dict):
        raise McpRpcError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))
    return answer.get("result")


def header_value(value: str) -> str:
    """`value` as an HTTP header carries it: as is when it is plain printable ASCII, else in the
    protocol's base64 sentinel."""
    if value.isascii() and value.isprintable() and value == value.strip() and not value.startswith("=?"):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="
