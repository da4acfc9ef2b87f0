"""One upstream round read from its stream: the deltas to relay now, the message once it ends.

Content and refusal pieces go on to the client as they come. Tool calls arrive as pieces
keyed by ``index`` (the id and name in the first, the arguments spread over several) and
are only assembled here: which of them the client may see is known when the round ends.
"""

from __future__ import annotations

from typing import Any

from toolmesh.errors import Unavailable


class StreamedRound:
    """The chunks of one streamed upstream answer, added one at a time with `add`."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None

    def add(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        """Take one upstream chunk; return the delta to relay to the client now, if any."""
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return None  # the usage chunk, or a keep-alive
        choice = choices[0]
        if not isinstance(choice, dict):
            raise Unavailable("the upstream model streamed a choice that is not an object")
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return None
        for piece in delta.get("tool_calls") or ():
            self._add_call(piece)
        relay = {
            key: delta[key]
            for key in ("content", "refusal")
            if isinstance(delta.get(key), str) and delta[key]
        }
        if "content" in relay:
            self._content.append(relay["content"])
        if "refusal" in relay:
            self._refusal.append(relay["refusal"])
        return relay or None

    def _add_call(self, piece: Any) -> None:
        index = piece.get("index") if isinstance(piece, dict) else None
        if not isinstance(index, int):
            raise Unavailable("the upstream model streamed a tool call without an index")
        call = self._calls.setdefault(index, {"id": "", "type": "function", "name": [], "arguments": []})
        if isinstance(piece.get("id"), str) and not call["id"]:
            call["id"] = piece["id"]
        function = piece.get("function")
        if isinstance(function, dict):
            # Names are joined like arguments, as the OpenAI SDK's own stream accumulator does.
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    call[key].append(function[key])

    def message(self) -> dict[str, Any]:
        """The assistant message the round's chunks add up to, as a non-streamed answer holds it."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content) or None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": call["type"],
                    "function": {"name": "".join(call["name"]), "arguments": "".join(call["arguments"])},
                }
                for _, call in sorted(self._calls.items())
            ]
        return message
