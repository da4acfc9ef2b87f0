"""The chat proxy with ``stream: true``, read through the official `openai` SDK: every upstream
round is streamed through as it comes, tool rounds run in between, a client that leaves stops
the upstream, and a failure mid-stream reaches the SDK as an error."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from tests.gateway.conftest import StartGateway
from tests.gateway.openai.conftest import MODEL, USER, Reply, Streamed, Upstream, completion, proxy
from tests.gateway.openai.test_chat import CLIENT_TOOL, MIXED


def text_of(chunks: list[ChatCompletionChunk]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def finishes(chunks: list[ChatCompletionChunk]) -> list[ChatCompletionChunk]:
    return [c for c in chunks if c.choices and c.choices[0].finish_reason]


async def ask(client: openai.AsyncOpenAI, **extra: Any) -> list[ChatCompletionChunk]:
    stream = await client.chat.completions.create(
        model=MODEL,
        messages=USER,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
        **extra,
    )
    return [chunk async for chunk in stream]


async def test_content_reaches_the_client_before_the_upstream_finished(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    hold = asyncio.Event()
    upstream.script += [Streamed(["2 + 3 ", "is ", "5."], hold=hold)]
    async with client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        seen = []
        async for chunk in stream:
            seen.append(chunk)
            if chunk.choices and chunk.choices[0].delta.content:
                break
        # The upstream holds its last piece until now: what arrived came through live.
        assert text_of(seen) == "2 + 3 " and upstream.finished == 0
        hold.set()
        seen += [chunk async for chunk in stream]
    assert text_of(seen) == "2 + 3 is 5." and upstream.finished == 1
    assert seen[0].choices[0].delta.role == "assistant"
    assert {(c.id, c.model, c.object) for c in seen} == {("chatcmpl-1", MODEL, "chat.completion.chunk")}
    assert [c.choices[0].finish_reason for c in finishes(seen)] == ["stop"]
    assert seen[-1].choices == [] and seen[-1].usage is not None and seen[-1].usage.total_tokens == 15
    assert upstream.requests[0]["stream"] is True


async def test_tool_rounds_run_between_streamed_rounds(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [
        Streamed(["Let me add. "], calls=(("call_1", "add", {"a": 2, "b": 3}),)),
        Streamed(["2 + 3 ", "= 5."], gap=0.01),
    ]
    async with client:
        chunks = await ask(client)
    assert text_of(chunks) == "Let me add. 2 + 3 = 5."
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)  # mesh calls stay inside
    (finish,) = finishes(chunks)
    assert finish.choices[0].finish_reason == "stop"
    record = (finish.model_extra or {})["toolmesh"]
    assert [(c["name"], c["arguments"], c["content"]) for c in record["tool_calls"]] == [
        ("add", '{"a": 2, "b": 3}', "5")  # the arguments, streamed in pieces, assembled
    ]
    assert {c.id for c in chunks} == {"chatcmpl-1"}  # one answer, though two upstream rounds
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 30
    second = upstream.requests[1]
    assert second["stream"] is True
    assert upstream.ports[0] == upstream.ports[1]  # the first stream, read to its end, freed its connection
    assert second["messages"][1]["tool_calls"][0]["function"] == {
        "name": "add",
        "arguments": '{"a": 2, "b": 3}',
    }
    assert second["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


async def test_a_long_mesh_call_between_rounds_gets_keep_alive_comments(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    gateway, client = await proxy(gateway_factory, upstream, gateway={"stream_keepalive": 0.2})
    wait = Streamed(["Let me wait. "], calls=(("call_1", "block", {"seconds": 1.0}),))
    upstream.script += [wait, Streamed(["Done."])]
    body = {"model": MODEL, "messages": USER, "stream": True}
    headers = {"authorization": "Bearer client-secret"}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        response = await http.post("/v1/chat/completions", json=body, headers=headers)
    assert response.status_code == 200, response.text
    # The comments come while the mesh call runs: after the first round's text, before the second's.
    before, _, after = response.text.partition(": keep-alive\n\n")
    assert "Let me wait. " in before and "Done." in after, response.text
    assert 3 <= response.text.count(": keep-alive\n\n") <= 7, response.text
    assert response.text.endswith("data: [DONE]\n\n")
    # The SDK skips the comments: the chunks are what they would be without them.
    upstream.script += [wait, Streamed(["Done."])]
    async with client:
        chunks = await ask(client)
    assert text_of(chunks) == "Let me wait. Done."
    assert [c.choices[0].finish_reason for c in finishes(chunks)] == ["stop"]


async def test_a_plain_completion_script_streams_the_same_answer(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    answer = "Oslo will be cold: " + "highs of twenty degrees, " * 6
    upstream.script += [completion(None, ("f", "forecast", {"city": "Oslo"})), completion(answer)]
    async with client:
        chunks = await ask(client)
    assert (
        text_of(chunks) == answer and sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 2
    )
    assert (finishes(chunks)[0].model_extra or {})["toolmesh"]["tool_calls"][0]["name"] == "forecast"


async def test_a_streamed_mixed_turn_hands_the_whole_turn_back(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [MIXED]
    async with client:
        chunks = await ask(client, tools=[CLIENT_TOOL])
    calls = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or ()]
    assert [(c.index, c.id, c.function.name) for c in calls if c.function] == [
        (0, "m1", "counter__increment"),
        (1, "c1", "get_time"),
    ]
    (finish,) = finishes(chunks)
    assert finish.choices[0].finish_reason == "tool_calls"
    record = (finish.model_extra or {})["toolmesh"]
    assert record["tool_messages"] == [{"role": "tool", "tool_call_id": "m1", "content": "5"}]


async def test_a_client_that_leaves_mid_stream_cancels_the_upstream_request(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [Streamed(["thinking", "never sent"], hold=asyncio.Event())]
    async with client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            stream=True,
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                break
        await stream.close()
        await asyncio.wait_for(upstream.abandoned.wait(), timeout=10)
    assert upstream.finished == 0


async def test_an_upstream_failure_mid_stream_ends_the_stream_with_an_error(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [Streamed(["Half an ans"], error="the model crashed")]
    seen: list[ChatCompletionChunk] = []

    async def read(stream: openai.AsyncStream[ChatCompletionChunk]) -> None:
        async for chunk in stream:
            seen.append(chunk)

    async with client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=USER,  # type: ignore[arg-type]
            stream=True,
        )
        with pytest.raises(openai.APIError) as failed:
            await read(stream)
    assert text_of(seen) == "Half an ans"
    assert "the model crashed" in failed.value.message and failed.value.code == "unavailable"


async def test_a_failure_before_the_first_chunk_is_an_ordinary_error_response(
    gateway_factory: StartGateway, upstream: Upstream
) -> None:
    _, client = await proxy(gateway_factory, upstream)
    upstream.script += [Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"})]
    async with client:
        with pytest.raises(openai.RateLimitError) as limited:
            await ask(client)
    assert limited.value.status_code == 429 and limited.value.response.headers["retry-after"] == "7"
