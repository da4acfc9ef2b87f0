"""The chat proxy's answer with ``stream: true``: every upstream round streamed as it comes.

What the client sees, in order, as one stream under the first round's id and model:

- a role chunk as soon as the upstream's first chunk arrives;
- the content (and refusal) pieces of every round, relayed one by one as they arrive,
  so text a model writes before calling tools ("Let me check.") shows at once;
- nothing while mesh calls run: the tool-call pieces of a round are assembled here,
  because which calls the client may see is only known when the round ends;
- at the end, the client's tool calls (whole, one chunk each; in a mixed turn the mesh
  calls too, see chat.py), then the finish chunk carrying the ``toolmesh`` record, as
  the whole completion does, then a usage chunk (all rounds added up) when
  ``stream_options.include_usage`` asked for it.

The transport adds ``data: [DONE]``, or an error event when this raises mid-stream.
Nothing is buffered beyond one upstream chunk and one round's tool calls: the next
upstream chunk is read when the client took the last one. Closing the iterator (the
client left) closes the upstream request with it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from toolmesh.errors import Unavailable
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.requests import CallOptions
from toolmesh.gateway.openai.chat import EXTENSION, ChatProxy, add_usage
from toolmesh.gateway.openai.chat_request import ChatRequest
from toolmesh.gateway.openai.chunks import ChunkHead
from toolmesh.gateway.openai.deltas import StreamedRound


async def stream_turn(
    proxy: ChatProxy, principal: Principal, request: ChatRequest, options: CallOptions | None = None
) -> AsyncGenerator[dict[str, Any], None]:
    """The tool loop with every upstream round streamed: ``chat.completion.chunk`` objects."""
    turn = await proxy.begin(principal, request, options)
    head: ChunkHead | None = None
    while True:
        streamed = StreamedRound()
        async for upstream_chunk in proxy.upstream.stream(turn.next_body()):
            if head is None:
                head = ChunkHead.of(upstream_chunk)
                yield head.chunk({"role": "assistant", "content": ""})
            delta = streamed.add(upstream_chunk)
            if delta is not None:
                yield head.chunk(delta)
        if head is None:
            raise Unavailable("the upstream model's stream ended before its first chunk")
        turn.usage = add_usage(turn.usage, streamed.usage)
        message = streamed.message()
        if await turn.after(message):
            continue
        calls = message.get("tool_calls") or []
        for index, call in enumerate(calls):
            yield head.chunk({"tool_calls": [{"index": index, **call}]})
        finish = streamed.finish_reason or "stop"
        if calls:
            finish = "tool_calls"
        elif finish == "tool_calls":
            finish = "stop"
        yield head.chunk({}, finish, **{EXTENSION: turn.record()})
        if request.include_usage and turn.usage is not None:
            yield head.usage(turn.usage)
        return
