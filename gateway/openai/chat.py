"""The chat proxy's core: an OpenAI chat completion that runs the mesh's tools server-side.

`ChatProxy.complete` takes a Chat Completions request (decoded JSON) from a
caller and:

1. adds the caller's mesh functions as tools (all, or the `ToolSelector`'s
   top-k for the latest user message when there are more than
   ``[chat] narrow_above``), next to the client's own tools, which win a name clash;
2. asks the upstream; when the model calls mesh functions, runs them in
   parallel through `Mesh.execute`, appends the assistant message and the tool
   messages, and asks again, for up to ``[chat] max_rounds`` rounds, then once
   more with ``tool_choice: "none"`` for an answer;
3. returns the last completion with a ``toolmesh`` field recording every call
   it ran (``rounds``, ``tool_calls``) and the usage of all rounds added up.

Calls of the client's own tools go back to the client untouched: if a round
holds some, the mesh calls beside them still run (recorded in ``toolmesh``)
and the completion returned carries only the client's calls. The client never
sees a call of a mesh function. ``tool_choice`` is passed on; a forcing one
("required", or one named function) applies to the first round only, or the
model could never stop calling.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from toolmesh.config import ChatConfig
from toolmesh.errors import InvalidRequest, ToolmeshError, Unavailable
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import CallOptions
from toolmesh.gateway.core.tool_formats import openai_tool
from toolmesh.gateway.core.tool_selection import AllTools, ToolSelector
from toolmesh.gateway.openai.toolcalls import CallFormat, parse_tool_calls, render_results
from toolmesh.gateway.openai.upstream import Upstream
from toolmesh.runtimes.functions.spec import FunctionSpec, tool_name

#: The extension field of a completion that records what the gateway ran.
EXTENSION = "toolmesh"
#: Request fields the proxy handles itself instead of passing them upstream.
_OWN_FIELDS = ("stream", "stream_options")


def _function_name(tool: Any) -> str | None:
    if isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        name = tool["function"].get("name")
        return name if isinstance(name, str) else None
    return None


def latest_user_text(messages: Sequence[Any]) -> str:
    """The text of the last user message (the text parts of a content array), or ""."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
                return "\n".join(p for p in parts if isinstance(p, str))
            return ""
    return ""


class ChatRequest:
    """A checked Chat Completions request: what goes upstream, and what the proxy keeps."""

    def __init__(self, document: Any, config: ChatConfig) -> None:
        if not isinstance(document, dict):
            raise InvalidRequest("the body must be a Chat Completions request object", param="body")
        model = document.get("model")
        if not isinstance(model, str) or not model:
            raise InvalidRequest("model: expected the name of a model", param="model")
        model = config.aliases.get(model, model)
        if config.models and model not in config.models:
            offered = ", ".join(repr(m) for m in (*config.models, *config.aliases))
            raise InvalidRequest(f"model {model!r} is not served here; use one of {offered}", param="model")
        messages = document.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise InvalidRequest("messages: expected a non-empty array of message objects", param="messages")
        tools = document.get("tools")
        if tools is None:
            tools = []
        if not isinstance(tools, list):
            raise InvalidRequest("tools: expected an array of tools", param="tools")
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or (
                tool.get("type") == "function" and _function_name(tool) is None
            ):
                raise InvalidRequest(
                    f"tools[{index}]: expected {{'type': 'function', 'function': {{'name', ...}}}}",
                    param=f"tools[{index}]",
                )
        if document.get("n", 1) != 1:
            raise InvalidRequest("n: the chat proxy answers with one choice (n = 1)", param="n")
        stream = document.get("stream", False)
        if not isinstance(stream, bool):
            raise InvalidRequest("stream: expected true or false", param="stream")
        options = document.get("stream_options")
        self.stream = stream
        self.include_usage = isinstance(options, dict) and options.get("include_usage") is True
        self.client_tools: list[dict[str, Any]] = tools
        self.client_names = {name for tool in tools if (name := _function_name(tool)) is not None}
        self.body = {k: v for k, v in document.items() if k not in _OWN_FIELDS}
        self.body["model"] = model

    @property
    def forced_function(self) -> str | None:
        """The function `tool_choice` names, if it names one."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
            name = choice["function"].get("name")
            return name if isinstance(name, str) else None
        return None


def _add_usage(total: dict[str, Any] | None, usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return total
    if total is None:
        return copy.deepcopy(usage)
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if isinstance(usage.get(key), int) and isinstance(total.get(key), int):
            total[key] += usage[key]
    return total


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
        specs = [
            s
            for s in self.mesh.functions(principal)
            if tool_name(s.qualified_name) not in request.client_names
        ]
        if len(specs) <= self.config.narrow_above:
            return specs
        query = latest_user_text(request.body["messages"])
        chosen = list(await self.selector.select(query, specs, self.config.top_k))[: self.config.top_k]
        forced = request.forced_function
        if forced and not any(tool_name(s.qualified_name) == forced for s in chosen):
            chosen += [s for s in specs if tool_name(s.qualified_name) == forced]
        return chosen

    async def complete(
        self, principal: Principal, request: ChatRequest, options: CallOptions | None = None
    ) -> dict[str, Any]:
        """Run the tool loop and return the final completion, with the ``toolmesh`` record."""
        options = options or CallOptions()
        body = dict(request.body)
        offered = await self.offer(principal, request)
        if offered:
            body["tools"] = request.client_tools + [openai_tool(spec) for spec in offered]
        messages = list(body["messages"])
        executed: list[dict[str, Any]] = []
        usage: dict[str, Any] | None = None
        rounds = 0
        while True:
            if rounds == self.config.max_rounds and offered:
                body["tool_choice"] = "none"  # out of rounds: the model must answer now
            completion = await self.upstream.complete({**body, "messages": messages})
            usage = _add_usage(usage, completion.get("usage"))
            choice = completion["choices"][0]
            message = choice["message"]
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise Unavailable("the upstream model's tool_calls is not an array")
            mine = [c for c in calls if _function_name(c) not in request.client_names]
            theirs = [c for c in calls if _function_name(c) in request.client_names]
            if mine and rounds < self.config.max_rounds:
                rounds += 1
                tool_messages = await self._run(principal, mine, options, rounds, executed)
                if not theirs:
                    messages.append(
                        {"role": "assistant", "content": message.get("content"), "tool_calls": mine}
                    )
                    messages += tool_messages
                    if body.get("tool_choice") == "required" or request.forced_function:
                        body["tool_choice"] = "auto"
                    continue
            if mine:  # the client never sees calls of mesh functions
                if theirs:
                    message["tool_calls"] = theirs
                else:
                    message.pop("tool_calls")
                    choice["finish_reason"] = "stop"
            completion[EXTENSION] = {"rounds": rounds, "tool_calls": executed}
            if usage is not None:
                completion["usage"] = usage
            return completion

    async def _run(
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
