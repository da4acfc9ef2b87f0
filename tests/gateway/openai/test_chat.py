"""The chat proxy, driven by the official `openai` SDK against a real gateway and real pods.

The upstream LLM is the one stand-in (conftest.py), answering from a script.
"""

from __future__ import annotations

import json
import socket

import httpx
import openai
import pytest

from tests.gateway.conftest import StartGateway
from tests.gateway.openai.conftest import (
    MODEL,
    USER,
    Reply,
    Upstream,
    completion,
    proxy,
    tool_names,
)
from toolmesh.config import KeyConfig


async def test_a_two_round_tool_loop_runs_mesh_functions_server_side(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [completion(None, ("call_1", "add", {"a": 2, "b": 3})), completion("2 + 3 = 5.")]
    async with client:
        reply = await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "2 + 3 = 5."
    assert reply.choices[0].finish_reason == "stop" and reply.choices[0].message.tool_calls is None
    record = (reply.model_extra or {})["toolmesh"]
    assert record["rounds"] == 1
    assert record["tool_calls"] == [
        {
            "id": "call_1",
            "name": "add",
            "arguments": '{"a": 2, "b": 3}',
            "round": 1,
            "is_error": False,
            "content": "5",
        }
    ]
    assert reply.usage is not None and reply.usage.total_tokens == 30  # both rounds
    first, second = upstream.requests
    assert {"add", "counter__increment", "forecast"} <= tool_names(first)
    assert first["model"] == MODEL and "stream" not in first
    assert second["messages"][:1] == USER
    assert second["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}
    assert upstream.authorization == ["Bearer upstream-secret"] * 2  # never the client's key


async def test_parallel_calls_run_at_the_same_time_and_failures_reach_the_model(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [
        completion(
            None,
            ("a", "meet", {"who": "ann"}),
            ("b", "meet", {"who": "bob"}),  # each waits for the other: run one at a time, both fail
            ("c", "add", {"a": "two"}),
            ("d", "no_such_tool", {}),
        ),
        completion("done"),
    ]
    async with client:
        reply = await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
    calls = {call["id"]: call for call in (reply.model_extra or {})["toolmesh"]["tool_calls"]}
    assert calls["a"]["content"] == "ann met" and calls["b"]["content"] == "bob met"
    assert calls["c"]["is_error"] and 'expected integer, got string "two"' in calls["c"]["content"]
    assert calls["d"]["is_error"] and calls["d"]["content"].startswith("Error: ")
    tool_messages = [m for m in upstream.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["a", "b", "c", "d"]


CLIENT_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "description": "The client's clock.", "parameters": {"type": "object"}},
}


async def test_calls_of_the_clients_own_tools_come_back_untouched(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [completion("Checking.", ("c1", "get_time", {"zone": "UTC"}))]
    async with client:
        reply = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            tools=[CLIENT_TOOL],  # type: ignore[list-item]
        )
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "tool_calls" and message.content == "Checking."
    assert message.tool_calls is not None and len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert call.id == "c1" and call.function.name == "get_time"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"zone": "UTC"}  # type: ignore[union-attr]
    assert (reply.model_extra or {})["toolmesh"] == {"rounds": 0, "tool_calls": [], "tool_messages": []}
    offered = upstream.requests[0]["tools"]
    assert offered[0] == CLIENT_TOOL and "counter__increment" in tool_names(upstream.requests[0])


MIXED = completion("Checking.", ("m1", "counter__increment", {"by": 5}), ("c1", "get_time", {"zone": "UTC"}))


async def counter_value(url: str) -> int:
    async with httpx.AsyncClient() as http:
        answer = await http.post(f"{url}/v1/functions/counter.current/invoke", json={})
    value = answer.json()["structured"]
    assert isinstance(value, int)
    return value


async def test_a_mixed_turn_runs_the_mesh_call_once_and_hands_the_whole_turn_back(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    gateway, client = await proxy(gateway_factory, upstream)
    upstream.script += [MIXED, completion("It is noon and the counter is at 5.")]
    async with client:
        reply = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            tools=[CLIENT_TOOL],  # type: ignore[list-item]
        )
        message = reply.choices[0].message
        assert reply.choices[0].finish_reason == "tool_calls"
        assert [c.id for c in message.tool_calls or []] == [
            "m1",
            "c1",
        ]  # the whole turn, as the model said it
        record = (reply.model_extra or {})["toolmesh"]
        assert [(c["id"], c["content"]) for c in record["tool_calls"]] == [("m1", "5")]
        assert record["tool_messages"] == [{"role": "tool", "tool_call_id": "m1", "content": "5"}]
        history = [
            *USER,
            message.model_dump(exclude_none=True),
            *record["tool_messages"],
            {"role": "tool", "tool_call_id": "c1", "content": "12:00"},
        ]
        final = await client.chat.completions.create(
            model=MODEL,
            messages=history,
            tools=[CLIENT_TOOL],  # type: ignore[list-item]
        )
    assert final.choices[0].message.content == "It is noon and the counter is at 5."
    assert (final.model_extra or {})["toolmesh"]["tool_calls"] == []  # nothing ran again
    assert await counter_value(gateway.url) == 5, "the mesh function ran exactly once"
    sent = upstream.requests[1]["messages"]
    assert {"role": "tool", "tool_call_id": "m1", "content": "5"} in sent  # the model reads the result
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["m1", "c1"]


async def test_a_history_missing_a_mesh_calls_result_is_refused_with_the_fix(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [MIXED]
    async with client:
        reply = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            tools=[CLIENT_TOOL],  # type: ignore[list-item]
        )
        history = [
            *USER,
            reply.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "c1", "content": "12:00"},  # a client that forgot m1's result
        ]
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(
                model=MODEL,
                messages=history,
                tools=[CLIENT_TOOL],  # type: ignore[list-item]
            )
    assert refused.value.param == "messages[1].tool_calls[0]"
    assert "toolmesh.tool_messages" in refused.value.message
    assert len(upstream.requests) == 1  # refused before the upstream, and m1 did not run again


async def test_a_client_tool_wins_a_name_clash_with_a_mesh_function(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    mine = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
    upstream.script += [completion(None, ("x", "add", {"a": 1}))]
    async with client:
        reply = await client.chat.completions.create(model=MODEL, messages=USER, tools=[mine])  # type: ignore[arg-type, list-item]
    assert reply.choices[0].message.tool_calls is not None  # returned, not run
    assert (reply.model_extra or {})["toolmesh"] == {"rounds": 0, "tool_calls": [], "tool_messages": []}
    assert [t for t in upstream.requests[0]["tools"] if t["function"]["name"] == "add"] == [mine]


async def test_upstream_errors_become_clean_errors(gateway_factory: StartGateway, upstream: Upstream) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [
        Reply(500, {"error": {"message": "the model crashed"}}),
        Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"}),
        Reply(404, {"error": {"message": "The model 'gpt-9' does not exist", "param": "model"}}),
        Reply(200, {"not": "a completion"}),
    ]
    async with client:
        with pytest.raises(openai.InternalServerError) as crashed:
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.RateLimitError) as limited:
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError) as unknown:
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.InternalServerError) as garbled:
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
    assert crashed.value.status_code == 503 and crashed.value.code == "unavailable"
    assert "the model crashed" in crashed.value.message
    assert limited.value.response.headers["retry-after"] == "7"
    assert unknown.value.code == "invalid_request" and unknown.value.param == "model"
    assert "does not exist" in unknown.value.message
    assert garbled.value.status_code == 503 and "not a chat completion" in garbled.value.message


async def test_an_unreachable_upstream_is_unavailable(gateway_factory: StartGateway) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    closed = Upstream(f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
    sock.close()
    _, client = await proxy(gateway_factory, closed)
    async with client:
        with pytest.raises(openai.InternalServerError) as refused:
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
    assert refused.value.status_code == 503 and "cannot reach the upstream model" in refused.value.message


async def test_rounds_are_limited_and_forcing_tool_choices_apply_once(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream, max_rounds=2)
    again = completion(None, ("n", "noop", {}))
    upstream.script += [again, again, completion("gave up")]
    async with client:
        reply = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            tool_choice="required",
        )
    assert reply.choices[0].message.content == "gave up"
    assert (reply.model_extra or {})["toolmesh"]["rounds"] == 2
    assert [r.get("tool_choice") for r in upstream.requests] == ["required", "auto", "none"]


async def test_bad_requests_and_models_are_refused_before_the_upstream(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream, models=(MODEL,), aliases={"fast": MODEL})
    upstream.script += [completion("hi")]
    async with client:
        with pytest.raises(openai.BadRequestError) as no_messages:
            await client.chat.completions.create(model=MODEL, messages=[])
        with pytest.raises(openai.BadRequestError) as other_model:
            await client.chat.completions.create(model="gpt-9", messages=USER)  # type: ignore[arg-type]
        reply = await client.chat.completions.create(model="fast", messages=USER)  # type: ignore[arg-type]
    assert no_messages.value.param == "messages"
    assert other_model.value.param == "model" and "'scripted-model'" in other_model.value.message
    assert reply.choices[0].message.content == "hi" and upstream.requests[0]["model"] == MODEL


async def test_a_key_is_offered_only_its_functions(gateway_factory: StartGateway, upstream: Upstream) -> None:
    keys = [KeyConfig(name="counting", key_env="CLIENT_KEY", scopes=("counter.*",))]
    _, client = await proxy(gateway_factory, upstream, keys=keys)
    upstream.script += [completion(None, ("x", "add", {"a": 1})), completion("no luck")]
    async with client:
        reply = await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
        anonymous = openai.AsyncOpenAI(base_url=client.base_url, api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await anonymous.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
        await anonymous.close()
    assert tool_names(upstream.requests[0]) == {"counter__current", "counter__increment"}
    call = (reply.model_extra or {})["toolmesh"]["tool_calls"][0]
    assert call["is_error"] and "no function named 'add'" in call["content"]


async def test_without_an_upstream_the_proxy_says_how_to_turn_it_on(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with openai.AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key="x", max_retries=0) as client:
        with pytest.raises(openai.InternalServerError) as off:
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
    assert off.value.status_code == 503 and "[chat] upstream_url" in off.value.message


async def test_each_mesh_call_of_a_round_costs_its_own_unit(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    keys = [KeyConfig(name="slow", key_env="CLIENT_KEY", rate=0.01, burst=3)]
    _, client = await proxy(gateway_factory, upstream, keys=keys)
    calls = [(f"c{i}", "add", {"a": i}) for i in range(5)]
    upstream.script += [completion(None, *calls), completion("done")]
    async with client:
        reply = await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(model=MODEL, messages=USER)  # type: ignore[arg-type]
    ran = [c for c in (reply.model_extra or {})["toolmesh"]["tool_calls"] if not c["is_error"]]
    assert len(ran) == 2, "the request took one unit of the burst of 3, its calls the rest"
