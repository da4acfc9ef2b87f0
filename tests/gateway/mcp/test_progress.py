"""tools/call on generators with a progress token: each item is a `notifications/progress`, read by
the official `mcp` client, and the result still holds every item."""

from __future__ import annotations

import mcp_types as types
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.mcp.test_endpoint import ERAS, connect
from toolmesh.gateway.mcp.convert import MAX_PROGRESS_MESSAGE, progress_message
from toolmesh.runtimes.functions.results import Binary, Json, Text

Progress = list[tuple[float, float | None, str | None]]


async def start(gateway_factory: StartGateway) -> str:
    gateway = await gateway_factory(runtime("tools", "sample_tools", "stream_tools"))
    return f"{gateway.url}/mcp"


@pytest.mark.parametrize("mode", ERAS)
async def test_each_item_is_a_progress_notification(gateway_factory: StartGateway, mode: str) -> None:
    url = await start(gateway_factory)
    progress: Progress = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with connect(url, mode=mode) as client:
        result = await client.call_tool("steps", {"count": 3}, progress_callback=on_progress)
        lines = await client.call_tool("count", {"n": 2}, progress_callback=on_progress)
        quiet = await client.call_tool("steps", {"count": 2})
    assert progress[:3] == [(1, None, '{"step":0}'), (2, None, '{"step":1}'), (3, None, '{"step":2}')]
    assert progress[3:] == [(1, None, "line 0"), (2, None, "line 1")]
    assert not result.is_error
    assert result.content == [types.TextContent(text=f'{{"step":{i}}}') for i in range(3)]
    assert lines.content == [types.TextContent(text="line 0"), types.TextContent(text="line 1")]
    assert quiet.content == [types.TextContent(text='{"step":0}'), types.TextContent(text='{"step":1}')]


async def test_a_generator_that_fails_after_its_items_is_an_error_result(
    gateway_factory: StartGateway,
) -> None:
    url = await start(gateway_factory)
    progress: Progress = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with connect(url) as client:
        broken = await client.call_tool("breaks", {"items": 2}, progress_callback=on_progress)
        plain = await client.call_tool("add", {"a": 1}, progress_callback=on_progress)
    assert [message for _, _, message in progress] == ["item 0", "item 1"]
    assert broken.is_error
    assert broken.content[:2] == [types.TextContent(text="item 0"), types.TextContent(text="item 1")]
    assert plain.structured_content == {"result": 2}


async def test_progress_messages_are_short() -> None:
    assert progress_message(Text("hi")) == "hi"
    assert progress_message(Json(b"[1,2]")) == "[1,2]"
    assert progress_message(Binary(b"abc", "image/png")) == "image/png, 3 bytes"
    long = progress_message(Text("x" * 5000))
    assert len(long) == MAX_PROGRESS_MESSAGE and long.endswith("…")
