"""The ``chat.completion.chunk`` objects of one streamed answer, all under one id and model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ChunkHead:
    """What every chunk of one answer repeats; taken from the upstream's first chunk, so an
    answer of several upstream rounds still reads as one stream to the client."""

    id: str
    created: int
    model: str
    system_fingerprint: str | None = None

    @classmethod
    def of(cls, chunk: dict[str, Any]) -> ChunkHead:
        """The head of the upstream chunk `chunk`."""
        fingerprint = chunk.get("system_fingerprint")
        created = chunk.get("created")
        return cls(
            id=str(chunk.get("id") or ""),
            created=created if isinstance(created, int) else 0,
            model=str(chunk.get("model") or ""),
            system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        )

    def _base(self) -> dict[str, Any]:
        base: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        if self.system_fingerprint is not None:
            base["system_fingerprint"] = self.system_fingerprint
        return base

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
        """A chunk of the one choice: `delta`, and the finish reason on the last one."""
        choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        return {**self._base(), "choices": choices, **extra}

    def usage(self, usage: dict[str, Any]) -> dict[str, Any]:
        """The last chunk of a stream that asked for ``stream_options.include_usage``."""
        return {**self._base(), "choices": [], "usage": usage}
