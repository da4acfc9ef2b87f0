"""examples.streaming: each yielded value arrives as its own content item, in order."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import pytest

from toolmesh.protocol.wire import content_from_proto
from toolmesh.runtimes.functions.results import Json, Text

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve

LONG_TEXT = " ".join(f"Sentence number {n} of a long reply,\nstreamed in pieces." for n in range(40))


@pytest.fixture
async def streaming(serve: Serve) -> Client:
    return await serve("examples.streaming")


async def test_stream_text_sends_word_aligned_chunks_that_join_back(streaming: Client) -> None:
    items, result = await streaming.stream("stream_text", text=LONG_TEXT, chunk_size=50)

    assert not result.is_error and result.content == []
    assert all(isinstance(item, Text) for item in items)
    chunks = [item.text for item in items if isinstance(item, Text)]
    assert len(chunks) > len(LONG_TEXT) // 50
    assert "".join(chunks) == LONG_TEXT
    assert all(len(chunk) <= 50 for chunk in chunks)
    assert all(chunk[-1].isspace() for chunk in chunks[:-1]), "chunks end between words"


async def test_a_word_longer_than_a_chunk_is_sent_whole(streaming: Client) -> None:
    word = "Pneumonoultramicroscopicsilicovolcanoconiosis"
    items, _ = await streaming.stream("stream_text", text=f"A {word} case", chunk_size=10)
    assert [item.text for item in items if isinstance(item, Text)] == ["A ", f"{word} ", "case"]


async def test_countdown_yields_in_order(streaming: Client) -> None:
    items, result = await streaming.stream("countdown", start=3, interval=0)
    assert not result.is_error
    assert [item.text for item in items if isinstance(item, Text)] == ["3...", "2...", "1...", "Time's up!"]


async def test_countdown_waits_between_ticks(streaming: Client) -> None:
    started = time.monotonic()
    items, _ = await streaming.stream("countdown", start=2, interval=0.1)
    assert len(items) == 3
    assert time.monotonic() - started >= 0.19


async def test_job_progress_is_structured_and_reaches_100(streaming: Client) -> None:
    steps = ["download", "resize", "upload"]
    items, result = await streaming.stream("run_job", steps=steps, seconds_per_step=0)

    assert not result.is_error
    reports = [item.value for item in items if isinstance(item, Json)]
    assert len(reports) == len(items) == 3
    assert [r["name"] for r in reports] == steps
    assert [r["percent"] for r in reports] == [33, 66, 100]
    assert [r["done"] for r in reports] == [False, False, True]


async def test_a_plain_invoke_collects_every_item(streaming: Client) -> None:
    result = await streaming.call("run_job", steps=["a", "b"], seconds_per_step=0)
    assert not result.is_error
    assert [json.loads(line)["step"] for line in result.text.splitlines()] == [1, 2]


async def test_items_arrive_while_the_generator_runs_and_it_stops_when_the_caller_leaves(
    streaming: Client,
) -> None:
    executor = streaming.running.pod.executor
    call = streaming.open_stream("countdown", start=60, interval=1)
    first = await call.read()
    assert content_from_proto(first.content) == Text("60...")
    assert executor.inflight == 1, "the first tick came before the countdown finished"

    call.cancel()
    for _ in range(200):
        if executor.inflight == 0:
            break
        await asyncio.sleep(0.01)
    assert executor.inflight == 0, "a cancelled stream must stop its generator"


async def test_bad_stream_arguments_are_named(streaming: Client) -> None:
    items, result = await streaming.stream("run_job", steps=[])
    assert items == []
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.violations[0].path == "steps"
