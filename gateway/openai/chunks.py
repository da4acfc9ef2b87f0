"""A finished chat completion as the ``chat.completion.chunk`` objects of OpenAI's stream format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from toolmesh.gateway.openai.chat import EXTENSION

#: Characters of content per streamed chunk.
CHUNK_CHARS = 48


def completion_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """A finished chat completion as the ``chat.completion.chunk`` objects a stream would carry."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {
        "id": completion.get("id", ""),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model", ""),
    }
    if completion.get("system_fingerprint") is not None:
        base["system_fingerprint"] = completion["system_fingerprint"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        return {**base, "choices": choices, **extra}

    yield chunk({"role": "assistant", "content": ""})
    content = message.get("content")
    if isinstance(content, str):
        for start in range(0, len(content), CHUNK_CHARS):
            yield chunk({"content": content[start : start + CHUNK_CHARS]})
    if message.get("refusal"):
        yield chunk({"refusal": message["refusal"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice.get("finish_reason") or "stop", **{EXTENSION: completion.get(EXTENSION)})
    if include_usage and completion.get("usage") is not None:
        yield {**base, "choices": [], "usage": completion["usage"]}
