"""The chat proxy's core: an OpenAI chat completion that runs the mesh's tools server-side.

`ChatProxy.complete` (and `stream_turn` in chat_stream.py, its streamed twin) takes a Chat
Completions request (decoded JSON) from a caller and:

1. adds the caller's mesh functions as tools (all, or the `ToolSelector`'s
   top-k for the latest user message when there are more than
   ``[chat] narrow_above``), next to the client's own tools, which win a name clash;
2. asks the upstream; when the model calls mesh functions, runs them in
   parallel through `Mesh.execute`, appends the assistant message and the tool
   messages, and asks again, for up to ``[chat] max_rounds`` rounds, then once
   more with ``tool_choice: "none"`` for an answer;
3. returns the last completion with a ``toolmesh`` field recording every call
   it ran (``rounds``, ``tool_calls``, ``tool_messages``) and the usage of all
   rounds added up.

Calls of the client's own tools go back to the client. When a round mixes them
with calls of mesh functions (a *mixed turn*), the mesh calls run once and the
answer carries the whole turn: the assistant message with all its tool calls,
and in ``toolmesh.tool_messages`` the mesh calls' results as tool messages. The
client appends both (and its own results) and sends the history back; the
model then reads every result, and the gateway runs nothing twice because the
calls it sees in the history are answered already. Without a mixed turn the
client never sees a call of a mesh function. This keeps the gateway stateless:
any replica can take the next request.

``tool_choice`` is passed on; a forcing one ("required", or one named function)
applies to the first round only, or the model could never stop calling.
"""

from __future__ import annotations

import copy
from typing import Any

from toolmesh.config import ChatConfig
from toolmesh.errors import ToolmeshError, Unavailable
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions
from toolmesh.gateway.core.tool_formats import openai_tool
from toolmesh.gateway.openai.chat_request import ChatRequest, function_name, latest_user_text
from toolmesh.gateway.openai.tool_selection import AllTools, ToolSelector
from toolmesh.gateway.openai.toolcalls import CallFormat, parse_tool_calls, render_results
from toolmesh.gateway.openai.upstream import Upstream
from toolmesh.runtimes.functions.spec import FunctionSpec, tool_name

__all__ = ["EXTENSION", "ChatProxy", "ChatRequest", "ChatTurn"]

#: The extension field of a completion that records what the gateway ran.
EXTENSION = "toolmesh"


def add_usage(total: dict[str, Any] | None, usage: Any) -> dict[str, Any] | None:
    """`total` plus one round's `usage` (token counts added up)."""
    if not isinstance(usage, dict):
        return total
    if total is None:
        return copy.deepcopy(usage)
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if isinstance(usage.get(key), int) and isinstance(total.get(key), int):
            total[key] += usage[key]
    return total


class ChatTurn:
    """One request's rounds: what goes upstream next, what ran, the usage so far.

    Both the whole-completion and the streamed answer drive it: `next_body`, ask the
    upstream, then `after` with the round's assistant message.
    """

    def __init__(
        self,
        proxy: ChatProxy,
        principal: Principal,
        request: ChatRequest,
        options: CallOptions,
        offered: list[FunctionSpec],
    ) -> None:
        self._proxy = proxy
        self._principal = principal
        self._request = request
        self._options = options
        self._offered = offered
        self._body = dict(request.body)
        if offered:
            self._body["tools"] = request.client_tools + [openai_tool(spec) for spec in offered]
        self._messages = list(self._body["messages"])
        self.rounds = 0
        self.executed: list[dict[str, Any]] = []
        self.usage: dict[str, Any] | None = None
        #: The results of a mixed turn's mesh calls, for the client to send back.
        self.tool_messages: list[dict[str, Any]] = []

    def next_body(self) -> dict[str, Any]:
        """The request for the next upstream round."""
        if self.rounds == self._proxy.config.max_rounds and self._offered:
            self._body["tool_choice"] = "none"  # out of rounds: the model must answer now
        return {**self._body, "messages": self._messages}

    async def after(self, message: dict[str, Any]) -> bool:
        """Run the mesh calls of a round's assistant `message`; True when another round follows.

        When False, `message` is the one the client gets: calls of mesh functions are
        dropped from it, unless they ran beside the client's calls (a mixed turn).
        """
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise Unavailable("the upstream model's tool_calls is not an array")
        client_names = self._request.client_names
        mine = [c for c in calls if function_name(c) not in client_names]
        theirs = [c for c in calls if function_name(c) in client_names]
        if mine and self.rounds < self._proxy.config.max_rounds:
            self.rounds += 1
            tool_messages = await self._proxy.run_calls(
                self._principal, mine, self._options, self.rounds, self.executed
            )
            if theirs:
                self.tool_messages = tool_messages
                return False
            self._messages.append(
                {"role": "assistant", "content": message.get("content"), "tool_calls": mine}
            )
            self._messages += tool_messages
            if self._body.get("tool_choice") == "required" or self._request.forced_function:
                self._body["tool_choice"] = "auto"
            return True
        if mine:  # out of rounds: these never ran, and the client cannot run them
            if theirs:
                message["tool_calls"] = theirs
            else:
                message.pop("tool_calls")
        return False

    def record(self) -> dict[str, Any]:
        """The ``toolmesh`` extension of the answer."""
        return {"rounds": self.rounds, "tool_calls": self.executed, "tool_messages": self.tool_messages}


class ChatProxy:
    """Chat completions with the mesh's functions run server-side (see the module docstring)."""

    def __init__(
        self, mesh: Mesh, config: ChatConfig, upstream: Upstream, selector: ToolSelector | None = None
    ) -> None:
        self.mesh = mesh
        self.config = config
        self.upstream = upstream
        self.selector: ToolSelector = selector or AllTools()

    async def close(self) -> None:
        await self.upstream.close()

    async def offer(self, principal: Principal, request: ChatRequest) -> list[FunctionSpec]:
        """The caller's functions to offer the model, minus names the client's own tools take."""
        visible = self.mesh.functions(principal)
        request.check_answered({tool_name(s.qualified_name) for s in visible})
        specs = [s for s in visible if tool_name(s.qualified_name) not in request.client_names]
        if len(specs) <= self.config.narrow_above:
            return specs
        query = latest_user_text(request.body["messages"])
        chosen = list(await self.selector.select(query, specs, self.config.top_k))[: self.config.top_k]
        forced = request.forced_function
        if forced and not any(tool_name(s.qualified_name) == forced for s in chosen):
            chosen += [s for s in specs if tool_name(s.qualified_name) == forced]
        return chosen

    async def begin(
        self, principal: Principal, request: ChatRequest, options: CallOptions | None
    ) -> ChatTurn:
        """The turn for `request`, before its first round."""
        offered = await self.offer(principal, request)
        return ChatTurn(self, principal, request, options or CallOptions(), offered)

    async def complete(
        self, principal: Principal, request: ChatRequest, options: CallOptions | None = None
    ) -> dict[str, Any]:
        """Run the tool loop and return the final completion, with the ``toolmesh`` record."""
        turn = await self.begin(principal, request, options)
        while True:
            completion = await self.upstream.complete(turn.next_body())
            turn.usage = add_usage(turn.usage, completion.get("usage"))
            choice = completion["choices"][0]
            if await turn.after(choice["message"]):
                continue
            if not choice["message"].get("tool_calls") and choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "stop"
            completion[EXTENSION] = turn.record()
            if turn.usage is not None:
                completion["usage"] = turn.usage
            return completion

    async def run_calls(
        self,
        principal: Principal,
        calls: list[Any],
        options: CallOptions,
        round_number: int,
        executed: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Run a round's mesh calls in parallel; record them and return the tool messages."""
        try:
            _, parsed = parse_tool_calls({"tool_calls": calls}, max_calls=self.mesh.config.max_batch)
        except ToolmeshError as exc:
            raise Unavailable(
                f"the upstream model sent tool calls the gateway cannot run: {exc.message}"
            ) from None
        results = await self.mesh.execute_batch(
            principal, [(c.name, c.arguments, c.error) for c in parsed], options
        )
        tool_messages: list[dict[str, Any]] = render_results(CallFormat.CHAT, parsed, results)["messages"]
        for call, result, tool_message in zip(parsed, results, tool_messages, strict=True):
            executed.append(
                {
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments.decode(),
                    "round": round_number,
                    "is_error": result.is_error,
                    "content": tool_message["content"],
                }
            )
        return tool_messages
