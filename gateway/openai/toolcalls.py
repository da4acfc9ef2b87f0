"""A model's tool calls in, their results out, in the format the model used.

`parse_tool_calls` reads what an LLM produced (decoded JSON): an OpenAI Chat assistant
message or completion (CHAT), OpenAI Responses items (RESPONSES), a Cloudflare/Hermes
list of ``{"name", "arguments"}`` (CLOUDFLARE), or Hermes text with ``<tool_call>``
blocks (HERMES). `render_results` answers in the same format, in order, by id.

A body of the wrong shape is an InvalidRequest whose `param` says where. One malformed
call (no name, arguments that are not a JSON object) only sets that call's `error`, so
the rest of the batch still runs and the model learns which call was wrong.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolmesh.errors import InvalidArguments, InvalidRequest, ToolmeshError, Violation
from toolmesh.runtimes.functions.results import Binary, Json, Resource, Result, Text, describe


class CallFormat(enum.Enum):
    """The format a batch of tool calls arrived in, and so the format of its answer."""

    CHAT = "chat"
    RESPONSES = "responses"
    CLOUDFLARE = "cloudflare"
    HERMES = "hermes"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a batch."""

    #: The caller's id; for formats without ids, "call_0", "call_1", ... by position.
    id: str
    #: The function name exactly as sent ("ns__name" or "ns.name"); "" when missing.
    name: str
    #: The arguments object as UTF-8 JSON (b"{}" when absent or empty).
    arguments: bytes
    #: Set when this call is malformed; the gateway answers it with this error.
    error: ToolmeshError | None = None


@dataclass(frozen=True, slots=True)
class _Item:
    id: str
    where: str  # the param path of the call; its name and arguments hang off it
    name: Any
    arguments: Any
    id_param: str | None = None  # None when the id was generated
    error: ToolmeshError | None = None


# An unclosed last block is accepted: models often stop on "</tool_call>" as a stop sequence.
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_SHAPES = (
    "an OpenAI Chat assistant message or completion, OpenAI Responses function_call items or a response, "
    "a list of {name, arguments}, or Hermes text with <tool_call> blocks"
)
_EMPTY = {
    CallFormat.CHAT: "an empty tool_calls array",
    CallFormat.RESPONSES: 'no items of type "function_call"',
    CallFormat.CLOUDFLARE: "an empty array",
    CallFormat.HERMES: "no <tool_call>...</tool_call> blocks",
}


def parse_tool_calls(body: Any, *, max_calls: int) -> tuple[CallFormat, list[ToolCall]]:
    """The format of `body` (decoded JSON) and the tool calls in it, in order.

    Raises InvalidRequest, with `param` naming the place, when the body has the wrong
    shape, holds no calls or more than `max_calls`, or uses an id twice (results are
    paired by id). A malformed single call does not raise: its `error` is set instead.
    """
    fmt, items, where = _locate(body)
    if not items:
        raise InvalidRequest(f"no tool calls to run: {where} has {_EMPTY[fmt]}", param=where)
    if len(items) > max_calls:
        raise InvalidRequest(f"{len(items)} tool calls in one request; the limit is {max_calls}", param=where)
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.id in seen:
            raise InvalidRequest(
                f"tool calls {seen[item.id]} and {index} share the id {item.id!r}; ids must be unique "
                "because results are paired by id (calls without one are numbered call_0, call_1, ...)",
                param=item.id_param or where,
            )
        seen[item.id] = index
    return fmt, [_check(item) for item in items]


def _locate(body: Any) -> tuple[CallFormat, list[_Item], str]:
    if isinstance(body, str):
        return CallFormat.HERMES, _hermes(body, "body"), "body"
    if isinstance(body, list):
        return _from_list(body, "")
    if isinstance(body, dict):
        return _from_object(body, "")
    raise _shape("body", _SHAPES, body)


def _from_object(obj: dict[str, Any], prefix: str) -> tuple[CallFormat, list[_Item], str]:
    """Calls in an object; `prefix` is its param path with a trailing dot ("" at the top)."""
    if "choices" in obj:
        at = prefix + "choices"
        choices = obj["choices"]
        if not isinstance(choices, list) or not choices:
            raise _shape(at, "a non-empty array of choices", choices)
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise _shape(f"{at}[0].message", "an assistant message", message)
        return _from_object(message, f"{at}[0].message.")
    text_key = next((key for key in ("content", "text") if isinstance(obj.get(key), str)), None)
    tool_calls = obj.get("tool_calls")
    # An assistant message with no tool_calls may still carry Hermes blocks in its content.
    if tool_calls is not None and (tool_calls or text_key is None):
        at = prefix + "tool_calls"
        if not isinstance(tool_calls, list):
            raise _shape(at, "an array of tool calls", tool_calls)
        fmt, items, _ = _from_list(tool_calls, at, responses=False)
        return fmt, items, at
    if "output" in obj:
        at = prefix + "output"
        if not isinstance(obj["output"], list):
            raise _shape(at, "an array of Responses API items", obj["output"])
        return CallFormat.RESPONSES, _responses(obj["output"], at), at
    if text_key is not None:
        at = prefix + text_key
        return CallFormat.HERMES, _hermes(obj[text_key], at), at
    where = prefix.rstrip(".") or "body"
    raise InvalidRequest(
        f"{where}: expected {_SHAPES}; the object has none of tool_calls, choices, output, content or text",
        param=where,
    )


def _from_list(items: list[Any], path: str, *, responses: bool = True) -> tuple[CallFormat, list[_Item], str]:
    """Calls in a list, told apart by their items: Chat calls have "function", Responses
    items a "type", and Cloudflare/Hermes calls neither."""
    where = path or "body"
    objects = [item for item in items if isinstance(item, dict)]
    if any("function" in item or item.get("type") == "function" for item in objects):
        fmt = CallFormat.CHAT
    elif any("type" in item for item in objects):
        fmt = CallFormat.RESPONSES if responses else CallFormat.CHAT
    else:
        fmt = CallFormat.CLOUDFLARE
    if fmt is CallFormat.RESPONSES:
        return fmt, _responses(items, path), where
    parse = _chat_item if fmt is CallFormat.CHAT else _cloudflare_item
    return fmt, [parse(item, f"{path}[{index}]", index) for index, item in enumerate(items)], where


def _chat_item(item: Any, at: str, index: int) -> _Item:
    if not isinstance(item, dict):
        raise _shape(at, 'a tool call {"id", "type", "function"}', item)
    kind = item.get("type", "function")
    if kind != "function":
        raise InvalidRequest(f"{at}.type: only function tool calls can run, got {kind!r}", param=f"{at}.type")
    call_id = _id(item.get("id"), f"{at}.id")
    function = item.get("function")
    if not isinstance(function, dict):
        raise _shape(f"{at}.function", 'an object {"name", "arguments"}', function)
    return _Item(call_id, f"{at}.function", function.get("name"), function.get("arguments"), f"{at}.id")


def _cloudflare_item(item: Any, at: str, index: int) -> _Item:
    if not isinstance(item, dict):
        raise _shape(at, 'a tool call {"name", "arguments"}', item)
    if item.get("id") is None:
        return _Item(f"call_{index}", at, item.get("name"), item.get("arguments"))
    return _Item(_id(item["id"], f"{at}.id"), at, item.get("name"), item.get("arguments"), f"{at}.id")


def _responses(items: list[Any], path: str) -> list[_Item]:
    calls = []
    for index, item in enumerate(items):
        at = f"{path}[{index}]"
        if not isinstance(item, dict):
            raise _shape(at, "a Responses API item object", item)
        if item.get("type") == "function_call":
            call_id = _id(item.get("call_id"), f"{at}.call_id")
            calls.append(_Item(call_id, at, item.get("name"), item.get("arguments"), f"{at}.call_id"))
    return calls


def _hermes(text: str, at: str) -> list[_Item]:
    items = []
    for index, match in enumerate(_BLOCK.finditer(text)):
        where = f"{at}.tool_call[{index}]"
        try:
            block = json.loads(match.group(1))
        except (ValueError, RecursionError):
            block = None
        if isinstance(block, dict):
            items.append(_Item(f"call_{index}", where, block.get("name"), block.get("arguments")))
        else:
            problem = InvalidRequest(
                f"{where}: expected a JSON object {{name, arguments}} inside <tool_call>", param=where
            )
            items.append(_Item(f"call_{index}", where, "", None, error=problem))
    return items


def _check(item: _Item) -> ToolCall:
    """The call, with `error` set when its name or arguments are unusable."""
    name = item.name if isinstance(item.name, str) else ""
    if item.error is not None:
        return ToolCall(item.id, name, b"{}", item.error)
    if not name:
        return ToolCall(item.id, "", b"{}", _shape(f"{item.where}.name", "the function's name", item.name))
    arguments, problem = _arguments(item.arguments, f"{item.where}.arguments")
    return ToolCall(item.id, name, arguments, problem)


def _arguments(value: Any, param: str) -> tuple[bytes, InvalidArguments | None]:
    """The arguments as JSON object bytes: an object, or a string holding one (OpenAI's form)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return b"{}", None
    if isinstance(value, dict):
        # ASCII escapes keep lone surrogates from a decoded body encodable.
        return json.dumps(value, separators=(",", ":")).encode(), None
    if not isinstance(value, str):
        return b"{}", _not_an_object(param, _kind(value))
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply to decode
        return b"{}", _not_an_object(param, "malformed JSON", f"arguments are not valid JSON: {exc}")
    if not isinstance(parsed, dict):
        return b"{}", _not_an_object(param, _kind(parsed))
    try:
        return value.encode(), None  # passed on as sent, not re-serialised
    except UnicodeEncodeError:
        return json.dumps(parsed, separators=(",", ":")).encode(), None


def _not_an_object(param: str, got: str, message: str = "") -> InvalidArguments:
    message = message or f"arguments must be a JSON object, got {got}"
    violation = Violation("", "a JSON object", got, message)
    return InvalidArguments(f"invalid arguments: {message}", [violation], param=param)


def _id(value: Any, param: str) -> str:
    if isinstance(value, str) and value:
        return value
    raise _shape(param, "a non-empty string id (results are paired by id)", value)


def _shape(param: str, expected: str, got: Any) -> InvalidRequest:
    return InvalidRequest(f"{param}: expected {expected}, got {_kind(got)}", param=param)


def _kind(value: Any) -> str:
    if value == "":
        return "an empty string"
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def tool_output_text(result: Result) -> str:
    """What a model reads of a result: text as it is, JSON as compact JSON, binary as
    ``[binary <mime>, <n> bytes]``, an embedded resource's text as it is and any other resource
    as ``[resource_link <uri> (<name>, <mime>, <description>)]`` or ``[resource <uri> (<mime>,
    <n> bytes)]``, one item per line; an error starts with "Error: "."""
    parts = []
    for item in result.content:
        if isinstance(item, Text):
            parts.append(item.text)
        elif isinstance(item, Json):
            parts.append(item.data.decode())  # Json items hold compact JSON already
        elif isinstance(item, Binary):
            parts.append(f"[binary {item.mime_type}, {len(item.data)} bytes]")
        elif isinstance(item, Resource):
            parts.append(item.text if item.text is not None else f"[{describe(item)}]")
    text = "\n".join(parts)
    if not result.is_error:
        return text
    if not text and result.error is not None:
        text = result.error.message
    return f"Error: {text}"


def render_results(fmt: CallFormat, calls: Sequence[ToolCall], results: Sequence[Result]) -> dict[str, Any]:
    """The answer to a batch in the format it arrived in; `results[i]` answers `calls[i]`.

    CHAT        ``{"messages": [{"role": "tool", "tool_call_id", "content"}, ...]}``
    RESPONSES   ``{"output": [{"type": "function_call_output", "call_id", "output"}, ...]}``
    CLOUDFLARE  ``{"results": [{"id", "name", "is_error", "content", "structured"}, ...]}``
    HERMES      the same ``results`` plus ``"text"``: one ``<tool_response>`` block per call
    """
    answers = [(call, result, tool_output_text(result)) for call, result in zip(calls, results, strict=True)]
    if fmt is CallFormat.CHAT:
        messages = [{"role": "tool", "tool_call_id": c.id, "content": text} for c, _, text in answers]
        return {"messages": messages}
    if fmt is CallFormat.RESPONSES:
        output = [{"type": "function_call_output", "call_id": c.id, "output": text} for c, _, text in answers]
        return {"output": output}
    listed = [
        {"id": c.id, "name": c.name, "is_error": r.is_error, "content": text, "structured": r.structured}
        for c, r, text in answers
    ]
    if fmt is CallFormat.CLOUDFLARE:
        return {"results": listed}
    return {"results": listed, "text": "\n".join(_tool_response(entry) for entry in listed)}


def _tool_response(entry: dict[str, Any]) -> str:
    """A Hermes ``<tool_response>`` block: the structured value when there is one, else the text."""
    value = entry["content"] if entry["is_error"] or entry["structured"] is None else entry["structured"]
    body = json.dumps({"name": entry["name"], "content": value}, ensure_ascii=False)
    # "<\/" is the same JSON, and keeps output that contains "</tool_response>" from closing the block.
    return "<tool_response>\n" + body.replace("</", "<\\/") + "\n</tool_response>"
