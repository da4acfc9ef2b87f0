"""A Chat Completions request as the chat proxy checks it before asking the upstream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolmesh.config import ChatConfig
from toolmesh.errors import InvalidRequest

#: Request fields the proxy handles itself instead of passing them upstream.
_OWN_FIELDS = ("stream", "stream_options")


def function_name(tool: Any) -> str | None:
    """The function name of a tool or tool call (``{"type": "function", "function": {"name"}}``)."""
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


def _unanswered_call(messages: list[dict[str, Any]], names: set[str]) -> str | None:
    """The param of the first call of one of `names` in the history without its tool message.

    Such calls come from a mixed answer (see chat.py): the gateway ran them once and
    gave their results to the client to send back; it must not run them again, and
    without the results the model would never learn what they did.
    """
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    for at, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for index, call in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(call, dict) or call.get("id") in answered:
                continue
            name = function_name(call)
            if name in names:
                return f"messages[{at}].tool_calls[{index}]"
    return None


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
            if not isinstance(tool, dict) or (tool.get("type") == "function" and function_name(tool) is None):
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
        self.client_names = {name for tool in tools if (name := function_name(tool)) is not None}
        self.body = {k: v for k, v in document.items() if k not in _OWN_FIELDS}
        self.body["model"] = model

    def check_answered(self, mesh_names: set[str]) -> None:
        """Refuse a history holding a call of a mesh function without its result."""
        unanswered = _unanswered_call(self.body["messages"], mesh_names - self.client_names)
        if unanswered is not None:
            raise InvalidRequest(
                f"{unanswered}: this call of a mesh function has no tool message; the gateway already "
                "ran it, so append the tool messages of that answer's toolmesh.tool_messages after it",
                param=unanswered,
            )

    @property
    def forced_function(self) -> str | None:
        """The function `tool_choice` names, if it names one."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
            name = choice["function"].get("name")
            return name if isinstance(name, str) else None
        return None
