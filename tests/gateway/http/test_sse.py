"""`POST /v1/functions/{name}/invoke` as server-sent events, against a real gateway and pods."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.gateway.http.sse import event, wants_events

SSE = {"accept": "text/event-stream"}


def parse(body: str) -> list[tuple[str, Any]]:
    """(event name, decoded data) for each event of an SSE body."""
    events = []
    for block in body.strip("\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


async def start(gateway_factory: StartGateway) -> httpx.AsyncClient:
    gateway = await gateway_factory(runtime("tools", "sample_tools", "stream_tools"))
    return httpx.AsyncClient(base_url=gateway.url, timeout=30)


async def test_a_generator_streams_each_item_then_the_result(gateway_factory: StartGateway) -> None:
    async with await start(gateway_factory) as http:
        response = await http.post("/v1/functions/ticks/invoke", json={"n": 3}, headers=SSE)
        plain = await http.post("/v1/functions/ticks/invoke", json={"n": 3})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    events = parse(response.text)
    assert [name for name, _ in events] == ["content", "content", "content", "result"]
    assert [data for _, data in events[:3]] == plain.json()["content"]
    result = events[-1][1]
    assert result["is_error"] is False and result["content"] == []
    assert set(result) == set(plain.json())


async def test_a_plain_function_gives_only_its_result(gateway_factory: StartGateway) -> None:
    async with await start(gateway_factory) as http:
        response = await http.post("/v1/functions/add/invoke", json={"a": 1, "b": 2}, headers=SSE)
    assert parse(response.text) == [("result", {**response_result(response), "structured": 3})]
    assert parse(response.text)[0][1]["content"] == [{"type": "json", "json": 3}]


def response_result(response: httpx.Response) -> dict[str, Any]:
    name, data = parse(response.text)[-1]
    assert name == "result"
    return dict(data)


async def test_refusals_before_the_first_item_keep_their_http_status(gateway_factory: StartGateway) -> None:
    async with await start(gateway_factory) as http:
        unknown = await http.post("/v1/functions/nope/invoke", headers=SSE)
        invalid = await http.post("/v1/functions/ticks/invoke", json={"n": "many"}, headers=SSE)
        timed_out = await http.post("/v1/functions/sleepy/invoke", json={"seconds": 2}, headers=SSE)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "function_not_found"
    assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "invalid_arguments"
    assert timed_out.status_code == 504
    assert all(r.headers["content-type"] == "application/json" for r in (unknown, invalid, timed_out))


async def test_failures_after_the_first_item_are_the_last_event(gateway_factory: StartGateway) -> None:
    async with await start(gateway_factory) as http:
        raised = await http.post("/v1/functions/breaks/invoke", json={"items": 2}, headers=SSE)
        stalled = await http.post("/v1/functions/stalls/invoke", headers=SSE)
        died = await http.post("/v1/functions/dies/invoke", headers=SSE)
    # What the function did is its result, as without SSE...
    events = parse(raised.text)
    assert [name for name, _ in events] == ["content", "content", "result"]
    assert events[-1][1]["is_error"] is True and events[-1][1]["error"]["code"] == "function_error"
    events = parse(stalled.text)
    assert [name for name, _ in events] == ["content", "result"]
    assert events[-1][1]["error"]["code"] == "timeout"
    # ...and what would have been an HTTP error is the error event, the status being sent already.
    assert died.status_code == 200
    events = parse(died.text)
    assert events[0] == ("content", {"type": "text", "text": "first"})
    assert events[-1][0] == "error" and events[-1][1]["error"]["code"] == "unavailable"
    assert len(events) == 2


async def test_a_slow_reader_pauses_the_function(gateway_factory: StartGateway, tmp_path: Path) -> None:
    """Nothing between the pod and the client buffers without bound: while the client stops
    reading, the function stops producing, a bounded number of items ahead of it."""
    count, size, read = 200, 256 * 1024, 5
    tally = tmp_path / "tally"
    arguments = {"count": count, "size": size, "tally": str(tally)}
    async with (
        await start(gateway_factory) as http,
        http.stream("POST", "/v1/functions/flood/invoke", json=arguments, headers=SSE) as response,
    ):
        lines = response.aiter_lines()
        seen = 0
        while seen < read:
            seen += (await anext(lines)) == "event: content"
        await asyncio.sleep(1.0)
        ahead = int(tally.read_text()) - seen
        await asyncio.sleep(0.5)
        assert int(tally.read_text()) - seen == ahead, "the function kept producing for a stalled reader"
        # On the way: the pod's queue of 16 items, the one in the function's yield, and some MB of
        # gRPC flow-control windows and socket buffers; not the 50 MB the function would make.
        assert ahead <= 17 + (16 * 1024 * 1024) // size, f"{ahead} items of {size} bytes ahead of the reader"
        async for line in lines:
            seen += line == "event: content"
    assert seen == count and int(tally.read_text()) == count
    print(f"items produced ahead of a stalled reader: {ahead} of {size} bytes")


def test_accept_header_and_event_framing() -> None:
    assert wants_events("text/event-stream")
    assert wants_events("application/json, Text/Event-Stream; charset=utf-8")
    assert not wants_events("application/json")
    assert not wants_events("text/event-stream;q=0")
    assert not wants_events(None)
    assert event("content", b'{"a":1}') == b'event: content\ndata: {"a":1}\n\n'
    assert event("content", b'{\n"a":1}') == b'event: content\ndata: {\ndata: "a":1}\n\n'


async def test_a_client_that_hangs_up_ends_the_call(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "sample_tools", "stream_tools"))
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        http.stream(
            "POST", "/v1/functions/ticks/invoke", json={"n": 1000, "delay": 0.01}, headers=SSE
        ) as response,
    ):
        lines = response.aiter_lines()
        assert await anext(lines) == "event: content"
        assert gateway.mesh.drain.inflight == 1
    # Ten seconds of ticks were left; the call ends as soon as the connection does.
    for _ in range(100):
        if gateway.mesh.drain.inflight == 0:
            break
        await asyncio.sleep(0.02)
    assert gateway.mesh.drain.inflight == 0


async def test_a_quiet_stream_gets_keep_alive_comments(gateway_factory: StartGateway) -> None:
    from toolmesh import AsyncClient, Text

    gateway = await gateway_factory(runtime("tools", "stream_tools"), stream_keepalive=0.2)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        response = await http.post("/v1/functions/quiet/invoke", json={"pause": 1.0}, headers=SSE)
    comments = response.text.count(": keep-alive\n\n")
    assert 3 <= comments <= 6, response.text
    # Readers skip comments: the events are what they would be without them.
    events = parse(response.text.replace(": keep-alive\n\n", ""))
    assert [name for name, _ in events] == ["content", "content", "result"]
    async with AsyncClient(gateway.url) as client:
        items = [item async for item in client.stream("quiet", {"pause": 0.5})]
    assert [item.text for item in items if isinstance(item, Text)] == ["before", "after"]


async def test_log_records_and_progress_are_events_when_the_url_asks(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "log_tools"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        logged = await http.post("/v1/functions/levels_sync/invoke?log_level=warning", json={}, headers=SSE)
        stepped = await http.post(
            "/v1/functions/progress/invoke?progress=true", json={"count": 2}, headers=SSE
        )
        plain = await http.post("/v1/functions/levels_sync/invoke", json={}, headers=SSE)
        wrong = await http.post("/v1/functions/levels_sync/invoke?log_level=loud", json={}, headers=SSE)
    assert parse(logged.text)[:-1] == [
        ("log", {"level": "warning", "logger": "levels_sync", "data": {"message": "running low on coffee"}})
    ]
    assert parse(logged.text)[-1][0] == "result"
    assert parse(stepped.text)[:-1] == [
        ("progress", {"progress": 1, "total": 2, "message": "step 1"}),
        ("progress", {"progress": 2, "total": 2, "message": "step 2"}),
    ]
    assert [name for name, _ in parse(plain.text)] == ["result"]
    assert wrong.status_code == 400 and "log_level" in wrong.text
