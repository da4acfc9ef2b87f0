"""OpenAI SDK objects round-trip through POST /v1/tool_calls on a real gateway."""

from __future__ import annotations

import json

import httpx
from openai.types.chat import ChatCompletionMessage, ChatCompletionToolMessageParam
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from openai.types.responses import ResponseFunctionToolCall
from pydantic import TypeAdapter

from tests.gateway.conftest import StartGateway


async def test_an_openai_assistant_message_round_trips(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    message = ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_add", type="function", function=Function(name="add", arguments='{"a": 1, "b": 2}')
            ),
            ChatCompletionMessageFunctionToolCall(
                id="call_inc", type="function", function=Function(name="counter__increment", arguments="{}")
            ),
            ChatCompletionMessageFunctionToolCall(
                id="call_bad", type="function", function=Function(name="add", arguments='{"a": "x"}')
            ),
        ],
    )
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/v1/tool_calls", json=message.model_dump(exclude_none=True))
    assert response.status_code == 200
    messages = response.json()["messages"]
    adapter: TypeAdapter[ChatCompletionToolMessageParam] = TypeAdapter(ChatCompletionToolMessageParam)
    for tool_message in messages:
        adapter.validate_python(tool_message)
    assert [m["tool_call_id"] for m in messages] == ["call_add", "call_inc", "call_bad"]
    assert messages[0]["content"] == "3"
    assert messages[1]["content"] == "1"
    assert messages[2]["content"].startswith("Error: ") and "a: expected integer" in messages[2]["content"]


async def test_responses_function_calls_round_trip(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    items = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        ResponseFunctionToolCall(
            type="function_call", call_id="fc_1", name="echo", arguments=json.dumps({"text": "hi"})
        ).model_dump(exclude_none=True),
    ]
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        response = await http.post("/v1/tool_calls", json={"output": items})
    assert response.json() == {
        "output": [{"type": "function_call_output", "call_id": "fc_1", "output": "hi"}]
    }


async def test_hermes_text_round_trips(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    text = (
        'Let me check.\n<tool_call>\n{"name": "add", "arguments": {"a": 5, "b": 5}}\n</tool_call>\n'
        '<tool_call>{"name": "echo", "arguments": {"text": "yo"}}</tool_call>'
    )
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        body = (await http.post("/v1/tool_calls", json={"content": text})).json()
    assert [r["content"] for r in body["results"]] == ["10", "yo"]
    assert body["text"].count("<tool_response>") == 2


async def test_a_lone_tool_call_answers_as_it_does_in_a_batch(gateway_factory: StartGateway) -> None:
    # A batch of one runs its call directly (no task, no gather): the same answer, error or not.
    gateway = await gateway_factory()

    def call(id_: str, name: str, arguments: str) -> dict[str, object]:
        return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}

    calls = [
        call("ok", "add", '{"a": 1, "b": 2}'),
        call("bad", "add", '{"a": "x"}'),
        call("no", "nope", "{}"),
    ]
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        message = {"role": "assistant", "tool_calls": calls}
        together = await http.post("/v1/tool_calls", json=message)
        alone = [await http.post("/v1/tool_calls", json={**message, "tool_calls": [one]}) for one in calls]
    assert together.status_code == 200 and [r.status_code for r in alone] == [200] * 3
    assert [r.json()["messages"][0] for r in alone] == together.json()["messages"]
    assert together.json()["messages"][0]["content"] == "3"
