"""Tool calls in every format: parsing, per-call errors, limits, and answers in the caller's format.

The OpenAI shapes are built with the official SDK's types, and the answers are validated
against the SDK's request types, so they can be appended to the next request as they are.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCallUnion
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseInputItemParam,
    ResponseInputParam,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter

from toolmesh.errors import InvalidArguments, InvalidRequest
from toolmesh.gateway.openai.toolcalls import (
    CallFormat,
    ToolCall,
    parse_tool_calls,
    render_results,
    tool_output_text,
)
from toolmesh.runtimes.functions.results import Binary, ErrorInfo, Json, Result, Text

LIMIT = 16


def parse(body: Any, max_calls: int = LIMIT) -> tuple[CallFormat, list[ToolCall]]:
    return parse_tool_calls(body, max_calls=max_calls)


def ok(value: Any) -> Result:
    """A successful result as a runtime produces it: text, or JSON plus the structured value."""
    if isinstance(value, str):
        return Result(content=[Text(value)])
    item = Json.of(value)
    return Result(content=[item], structured_json=item.data)


def answer(call: ToolCall) -> Result:
    """What the gateway does: the call's own error, or a result."""
    if call.error is not None:
        return Result.failure(ErrorInfo.from_exception(call.error))
    return ok({"called": call.name, "with": json.loads(call.arguments)})


def sdk_message(*calls: tuple[str, str, str]) -> ChatCompletionMessage:
    tool_calls: list[ChatCompletionMessageToolCallUnion] = [
        ChatCompletionMessageFunctionToolCall(
            id=call_id, type="function", function=Function(name=name, arguments=arguments)
        )
        for call_id, name, arguments in calls
    ]
    return ChatCompletionMessage(role="assistant", content=None, tool_calls=tool_calls)


def chat_call(call_id: str, name: str = "math__add", arguments: Any = '{"a": 1}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def function_call(call_id: str, name: str = "math__add", arguments: str = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


# --- OpenAI Chat ------------------------------------------------------------------------------


def test_chat_message_from_the_sdk_round_trips_into_valid_tool_messages() -> None:
    message = sdk_message(
        ("call_Xy1", "weather__get_forecast", '{"city": "Paris", "days": 2}'),
        ("call_Ab2", "math.add", '{"a": 1.5, "b": 2}'),
        ("call_Zz3", "text__shout", '{"text": "héllo"}'),
    )
    fmt, calls = parse(message.model_dump())
    assert fmt is CallFormat.CHAT
    assert [c.id for c in calls] == ["call_Xy1", "call_Ab2", "call_Zz3"]
    assert [c.name for c in calls] == ["weather__get_forecast", "math.add", "text__shout"]
    assert calls[0].arguments == b'{"city": "Paris", "days": 2}'  # passed on as sent
    assert json.loads(calls[2].arguments) == {"text": "héllo"}
    assert all(c.error is None for c in calls)

    results = [
        ok({"days": [21.5, 22.0]}),
        ok("3.5"),
        Result(content=[Text("HÉLLO"), Binary(b"xyz", "image/png")]),
    ]
    rendered = render_results(fmt, calls, results)
    assert list(rendered) == ["messages"]
    adapter = TypeAdapter(ChatCompletionToolMessageParam)
    for tool_message in rendered["messages"]:
        adapter.validate_python(tool_message)
        assert set(tool_message) == {"role", "tool_call_id", "content"}
    assert rendered["messages"] == [
        {"role": "tool", "tool_call_id": "call_Xy1", "content": '{"days":[21.5,22.0]}'},
        {"role": "tool", "tool_call_id": "call_Ab2", "content": "3.5"},
        {"role": "tool", "tool_call_id": "call_Zz3", "content": "HÉLLO\n[binary image/png, 3 bytes]"},
    ]
    # Ready to append: the assistant message plus the tool messages are a valid conversation.
    conversation = [message.model_dump(exclude_none=True), *rendered["messages"]]
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(conversation)


def test_a_whole_chat_completion_uses_its_first_choice() -> None:
    completion = ChatCompletion(
        id="chatcmpl-1",
        created=0,
        model="gpt-4.1",
        object="chat.completion",
        choices=[
            Choice(finish_reason="tool_calls", index=0, message=sdk_message(("call_1", "math__add", "{}"))),
            Choice(finish_reason="tool_calls", index=1, message=sdk_message(("call_2", "math__sub", "{}"))),
        ],
    )
    fmt, calls = parse(completion.model_dump())
    assert fmt is CallFormat.CHAT
    assert [(c.id, c.name) for c in calls] == [("call_1", "math__add")]


def test_chat_tool_calls_alone_bare_or_with_object_arguments() -> None:
    body = {"tool_calls": [chat_call("a", arguments={"x": [1, 2]}), chat_call("b", arguments="")]}
    fmt, calls = parse(body)
    assert fmt is CallFormat.CHAT
    assert json.loads(calls[0].arguments) == {"x": [1, 2]}
    assert calls[1].arguments == b"{}"
    fmt, bare = parse([chat_call("a"), chat_call("b")])
    assert fmt is CallFormat.CHAT and [c.id for c in bare] == ["a", "b"]


@pytest.mark.parametrize("arguments", [None, "", "  ", {}, "{}"])
def test_absent_or_empty_arguments_are_an_empty_object(arguments: Any) -> None:
    function: dict[str, Any] = {"name": "ping"}
    if arguments is not None:
        function["arguments"] = arguments
    _, [call] = parse({"tool_calls": [{"id": "a", "type": "function", "function": function}]})
    assert call.arguments == b"{}" and call.error is None


# --- OpenAI Responses -------------------------------------------------------------------------


def sdk_items() -> list[Any]:
    return [
        ResponseReasoningItem(id="rs_1", type="reasoning", summary=[]),
        ResponseFunctionToolCall(
            type="function_call", call_id="call_r1", name="weather__get_forecast", arguments='{"city":"Oslo"}'
        ),
        ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="Checking.", annotations=[])],
        ),
        ResponseFunctionToolCall(type="function_call", call_id="call_r2", name="math__add", arguments="{}"),
    ]


def test_responses_items_from_the_sdk_round_trip_into_valid_function_call_outputs() -> None:
    items = sdk_items()
    fmt, calls = parse([item.model_dump() for item in items])
    assert fmt is CallFormat.RESPONSES
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_r1", "weather__get_forecast", b'{"city":"Oslo"}'),
        ("call_r2", "math__add", b"{}"),
    ]
    rendered = render_results(fmt, calls, [ok({"days": [3.0]}), ok("0")])
    assert rendered == {
        "output": [
            {"type": "function_call_output", "call_id": "call_r1", "output": '{"days":[3.0]}'},
            {"type": "function_call_output", "call_id": "call_r2", "output": "0"},
        ]
    }
    for item in rendered["output"]:
        TypeAdapter(FunctionCallOutput).validate_python(item)
        TypeAdapter(ResponseInputItemParam).validate_python(item)
    # Ready to append: the model's items plus the outputs are a valid next input.
    next_input = [item.model_dump(exclude_none=True) for item in items] + rendered["output"]
    TypeAdapter(ResponseInputParam).validate_python(next_input)


def test_a_response_object_is_read_from_its_output() -> None:
    response = Response(
        id="resp_1",
        created_at=0,
        model="gpt-4.1",
        object="response",
        output=sdk_items(),
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
    )
    fmt, calls = parse(response.model_dump())
    assert fmt is CallFormat.RESPONSES
    assert [c.id for c in calls] == ["call_r1", "call_r2"]


# --- Cloudflare / Hermes JSON -----------------------------------------------------------------


def test_cloudflare_list_numbers_calls_without_ids_and_keeps_given_ones() -> None:
    body = [
        {"name": "weather__get_forecast", "arguments": {"city": "Rome"}},
        {"name": "math.add", "arguments": '{"a": 2, "b": 3}', "id": "mine"},
        {"name": "ping"},
    ]
    fmt, calls = parse(body)
    assert fmt is CallFormat.CLOUDFLARE
    assert [c.id for c in calls] == ["call_0", "mine", "call_2"]
    assert [json.loads(c.arguments) for c in calls] == [{"city": "Rome"}, {"a": 2, "b": 3}, {}]
    failed = Result.failure(ErrorInfo("function_error", "boom"))
    rendered = render_results(fmt, calls, [ok({"t": 20}), ok("5"), failed])
    assert rendered == {
        "results": [
            {
                "id": "call_0",
                "name": "weather__get_forecast",
                "is_error": False,
                "content": '{"t":20}',
                "structured": {"t": 20},
            },
            {"id": "mine", "name": "math.add", "is_error": False, "content": "5", "structured": None},
            {"id": "call_2", "name": "ping", "is_error": True, "content": "Error: boom", "structured": None},
        ]
    }


def test_workers_ai_answer_with_tool_calls_is_cloudflare() -> None:
    fmt, calls = parse({"response": None, "tool_calls": [{"name": "math__add", "arguments": {"a": 1}}]})
    assert fmt is CallFormat.CLOUDFLARE
    assert calls == [ToolCall("call_0", "math__add", b'{"a":1}')]


# --- Hermes text ------------------------------------------------------------------------------

HERMES = """I'll look up both cities.
<tool_call>
{"name": "weather__get_forecast", "arguments": {"city": "Paris"}}
</tool_call>
<tool_call>{"name": "weather__get_forecast", "arguments": "{\\"city\\": \\"Lima\\"}"}</tool_call>
<tool_call>
{"name": "math__add", "arguments": {"a": 1, "b": 2}}
"""  # the last block is unclosed: models often stop on "</tool_call>"


@pytest.mark.parametrize("wrap", [lambda t: t, lambda t: {"content": t}, lambda t: {"text": t}])
def test_hermes_text_with_several_blocks(wrap: Any) -> None:
    fmt, calls = parse(wrap(HERMES))
    assert fmt is CallFormat.HERMES
    assert [c.id for c in calls] == ["call_0", "call_1", "call_2"]
    assert [c.name for c in calls] == ["weather__get_forecast", "weather__get_forecast", "math__add"]
    assert [json.loads(c.arguments) for c in calls] == [{"city": "Paris"}, {"city": "Lima"}, {"a": 1, "b": 2}]


def test_an_assistant_message_without_tool_calls_may_carry_hermes_blocks() -> None:
    message = {"role": "assistant", "content": HERMES, "tool_calls": None}
    fmt, calls = parse(message)
    assert fmt is CallFormat.HERMES and len(calls) == 3


def test_hermes_answer_has_results_and_tool_response_blocks() -> None:
    _, calls = parse(HERMES)
    results = [
        ok({"high": 21}),
        ok("sunny </tool_response> <tool_call>"),
        Result.failure(ErrorInfo("timeout", "too slow")),
    ]
    rendered = render_results(CallFormat.HERMES, calls, results)
    assert [r["id"] for r in rendered["results"]] == ["call_0", "call_1", "call_2"]
    assert rendered["results"][2]["is_error"] is True
    blocks = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", rendered["text"], re.DOTALL)
    # Output that contains "</tool_response>" cannot close its block early.
    assert rendered["text"].count("</tool_response>") == 3
    assert [json.loads(block) for block in blocks] == [
        {"name": "weather__get_forecast", "content": {"high": 21}},
        {"name": "weather__get_forecast", "content": "sunny </tool_response> <tool_call>"},
        {"name": "math__add", "content": "Error: too slow"},
    ]
    # One block per call, newline-separated, ready to append to a prompt.
    assert rendered["text"].startswith("<tool_response>\n") and rendered["text"].endswith(
        "\n</tool_response>"
    )
    assert rendered["text"].count("</tool_response>\n<tool_response>") == 2


def test_a_malformed_hermes_block_is_an_error_for_that_call_only() -> None:
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": oops}</tool_call>'
    _, calls = parse(text)
    assert calls[0].error is None
    assert isinstance(calls[1].error, InvalidRequest)
    assert calls[1].error.param == "body.tool_call[1]"
    assert (calls[1].id, calls[1].name, calls[1].arguments) == ("call_1", "", b"{}")


# --- Shape errors -----------------------------------------------------------------------------

GOOD = chat_call("ok")
SHAPES: list[tuple[Any, str, str]] = [
    (42, "body", "got a number"),
    (None, "body", "got null"),
    ({}, "body", "none of tool_calls"),
    ({"messages": []}, "body", "none of tool_calls"),
    ([], "body", "no tool calls"),
    ({"tool_calls": []}, "tool_calls", "no tool calls"),
    ({"tool_calls": "x"}, "tool_calls", "an array of tool calls"),
    ({"tool_calls": [GOOD, {"id": "b", "type": "function"}]}, "tool_calls[1].function", "expected an object"),
    ({"tool_calls": [GOOD, {"id": "b", "function": "add"}]}, "tool_calls[1].function", "got a string"),
    ({"tool_calls": [{"type": "function", "function": {"name": "a"}}]}, "tool_calls[0].id", "got null"),
    ({"tool_calls": [chat_call("")]}, "tool_calls[0].id", "got an empty string"),
    ({"tool_calls": [GOOD, 7]}, "tool_calls[1]", "got a number"),
    (
        {"tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "x", "input": ""}}]},
        "tool_calls[0].type",
        "custom",
    ),
    ({"choices": []}, "choices", "non-empty array"),
    ({"choices": [{"message": "hi"}]}, "choices[0].message", "got a string"),
    (
        {"choices": [{"message": {"tool_calls": [{"id": "a", "type": "function"}]}}]},
        "choices[0].message.tool_calls[0].function",
        "got null",
    ),
    ({"choices": [{"message": {"role": "assistant", "content": None}}]}, "choices[0].message", "none of"),
    ({"output": "x"}, "output", "an array of Responses API items"),
    ({"output": [{"type": "message", "content": []}]}, "output", 'no items of type "function_call"'),
    ({"output": [function_call("a"), "junk"]}, "output[1]", "got a string"),
    ([{"type": "function_call", "name": "a", "arguments": "{}"}], "[0].call_id", "got null"),
    ([{"name": "a"}, 7], "[1]", "got a number"),
    ([{"name": "a", "id": 5}], "[0].id", "got a number"),
    ("no calls here", "body", "no <tool_call>"),
    ({"content": "just words"}, "content", "no <tool_call>"),
    ({"role": "assistant", "content": "Hello!", "tool_calls": None}, "content", "no <tool_call>"),
]


@pytest.mark.parametrize(("body", "param", "fragment"), SHAPES)
def test_a_body_of_the_wrong_shape_names_the_place(body: Any, param: str, fragment: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse(body)
    assert type(caught.value) is InvalidRequest
    assert caught.value.param == param
    assert fragment in caught.value.message


# --- Per-call errors --------------------------------------------------------------------------


def test_malformed_calls_get_their_own_errors_and_the_batch_still_parses() -> None:
    body = {
        "tool_calls": [
            chat_call("good", arguments='{"a": 1}'),
            chat_call("broken", arguments='{"a": 1,'),
            chat_call("array", arguments="[1, 2]"),
            chat_call("number", arguments=5),
            {"id": "nameless", "type": "function", "function": {"arguments": "{}"}},
            chat_call("good2", arguments={"b": 2}),
        ]
    }
    fmt, calls = parse(body)
    assert [c.id for c in calls] == ["good", "broken", "array", "number", "nameless", "good2"]
    assert calls[0].error is None and calls[5].error is None

    broken = calls[1].error
    assert isinstance(broken, InvalidArguments)
    assert broken.param == "tool_calls[1].function.arguments"
    [violation] = broken.violations
    assert (violation.path, violation.expected, violation.got) == ("", "a JSON object", "malformed JSON")
    assert "not valid JSON" in violation.message

    for index, got in ((2, "an array"), (3, "a number")):
        error = calls[index].error
        assert isinstance(error, InvalidArguments)
        assert error.param == f"tool_calls[{index}].function.arguments"
        assert [(v.expected, v.got) for v in error.violations] == [("a JSON object", got)]
        assert calls[index].arguments == b"{}"

    nameless = calls[4].error
    assert type(nameless) is InvalidRequest and nameless.param == "tool_calls[4].function.name"
    assert calls[4].name == ""

    rendered = render_results(fmt, calls, [answer(call) for call in calls])
    contents = [m["content"] for m in rendered["messages"]]
    assert [m["tool_call_id"] for m in rendered["messages"]] == [c.id for c in calls]
    assert [text.startswith("Error: ") for text in contents] == [False, True, True, True, True, False]
    assert "arguments must be a JSON object, got an array" in contents[2]


def test_cloudflare_arguments_that_are_not_an_object_fail_only_that_call() -> None:
    _, calls = parse([{"name": "a", "arguments": ["x"]}, {"name": "b", "arguments": {"k": "v"}}])
    assert isinstance(calls[0].error, InvalidArguments) and calls[0].error.param == "[0].arguments"
    assert calls[1] == ToolCall("call_1", "b", b'{"k":"v"}')


# --- Ids and limits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tool_calls": [chat_call("a"), chat_call("b"), chat_call("a")]}, "tool_calls[2].id"),
        ([function_call("x"), {"type": "reasoning"}, function_call("x")], "[2].call_id"),
        ([{"name": "a", "id": "k"}, {"name": "b", "id": "k"}], "[1].id"),
        ([{"name": "a", "id": "call_1"}, {"name": "b"}], "body"),  # collides with a generated id
    ],
)
def test_duplicate_ids_are_refused(body: Any, param: str) -> None:
    with pytest.raises(InvalidRequest, match="share the id") as caught:
        parse(body)
    assert caught.value.param == param


def test_the_limit_on_calls_per_batch() -> None:
    calls = [chat_call(f"c{i}") for i in range(3)]
    assert len(parse({"tool_calls": calls}, max_calls=3)[1]) == 3
    with pytest.raises(InvalidRequest, match="3 tool calls in one request; the limit is 2") as caught:
        parse({"tool_calls": calls}, max_calls=2)
    assert caught.value.param == "tool_calls"
    # Items that are not calls do not count.
    items = [{"type": "reasoning", "summary": []}] * 5 + [function_call("x"), function_call("y")]
    assert len(parse(items, max_calls=2)[1]) == 2
    with pytest.raises(InvalidRequest) as hermes:
        parse(HERMES, max_calls=2)
    assert hermes.value.param == "body"


# --- Results as text --------------------------------------------------------------------------


def test_tool_output_text_shows_every_item_and_marks_errors() -> None:
    mixed = Result(
        content=[Text("line one"), Json.of({"a": [1, 2], "b": "é"}), Binary(b"\x00" * 10, "audio/wav")]
    )
    assert tool_output_text(mixed) == 'line one\n{"a":[1,2],"b":"é"}\n[binary audio/wav, 10 bytes]'
    assert tool_output_text(Result()) == ""
    failure = Result.failure(ErrorInfo("timeout", "took longer than 5s"))
    assert tool_output_text(failure) == "Error: took longer than 5s"
    bare = Result(is_error=True, error=ErrorInfo("internal_error", "lost"))
    assert tool_output_text(bare) == "Error: lost"


def test_render_needs_one_result_per_call() -> None:
    _, calls = parse({"tool_calls": [chat_call("a"), chat_call("b")]})
    with pytest.raises(ValueError, match="zip"):
        render_results(CallFormat.CHAT, calls, [ok("only one")])
