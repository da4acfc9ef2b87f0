"""`ctx.logger` records as `notifications/message` and `ctx.report_progress` as `notifications/progress`,
read by the official `mcp` client from a real gateway and real pods, in both protocol eras."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.gateway.mcp.notifications import mcp_level, python_level
from toolmesh.runtimes.functions.call_events import MAX_LOG_EVENTS

Records = list[types.LoggingMessageNotificationParams]
MODERN, LEGACY = "auto", "legacy"


async def start(gateway_factory: StartGateway) -> str:
    gateway = await gateway_factory(runtime("tools", "log_tools", "sample_tools"))
    return f"{gateway.url}/mcp"


@contextlib.asynccontextmanager
async def connect(
    url: str, records: Records, mode: str = MODERN, session: str = "", **options: Any
) -> AsyncIterator[Client]:
    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        records.append(params)

    headers = {"X-Session-Id": session} if session else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, logging_callback=on_log, **options
        ) as client,
    ):
        yield client


def messages(records: Records) -> list[tuple[str, str]]:
    return [(r.level, r.data["message"]) for r in records]


async def test_records_at_or_above_the_requested_level_arrive_in_order_before_the_result(
    gateway_factory: StartGateway,
) -> None:
    url = await start(gateway_factory)
    records: Records = []
    # 2026-07-28: the level rides each request's _meta (the client stamps it).
    async with connect(url, records, log_level="warning") as client:
        result = await client.call_tool("levels", {})
        # Already here when the result is: the notifications went first on the call's stream.
        got = messages(records)
    assert result.content == [types.TextContent(text="done")]
    assert got == [
        ("warning", "running low on coffee"),
        ("error", "failed once"),
        ("critical", "on fire"),
    ]
    assert {r.logger for r in records} == {"levels"}
    assert records[1].data == {"message": "failed once", "exception": "ValueError: bad input"}


async def test_debug_from_a_sync_function_with_extra_fields(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    records: Records = []
    async with connect(url, records, log_level="debug") as client:
        await client.call_tool("levels_sync", {})
    assert messages(records) == [
        ("debug", "looking closely"),
        ("info", "started"),
        ("warning", "running low on coffee"),
    ]
    assert records[1].data == {"message": "started", "city": "Paris", "days": 3}


async def test_nothing_arrives_when_nothing_was_asked(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    records: Records = []
    notifications: list[object] = []

    async def on_message(message: object) -> None:
        notifications.append(message)

    async with connect(url, records, message_handler=on_message) as client:
        logged = await client.call_tool("levels", {})
        stepped = await client.call_tool("progress", {"count": 3})
        # The same client, asking: the handler does see what arrives.
        await client.call_tool("progress", {"count": 1}, progress_callback=None, meta={"progressToken": "t"})
    assert records == []
    assert [type(n).__name__ for n in notifications] == ["ProgressNotification"]
    assert logged.content == [types.TextContent(text="done")] and stepped.structured_content == {"result": 3}


# The client warns that logging/setLevel is deprecated from 2026-07-28 on; 2025 clients still send it.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_the_handshake_era_sends_info_and_above_unless_set_for_the_session(
    gateway_factory: StartGateway,
) -> None:
    url = await start(gateway_factory)
    default: Records = []
    async with connect(url, default, mode=LEGACY) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_capabilities.logging is not None
        # Stateless: without a session id to remember it under, setLevel is accepted and forgotten.
        await client.set_logging_level("error")
        await client.call_tool("levels_sync", {})
    assert messages(default) == [("info", "started"), ("warning", "running low on coffee")]
    remembered: Records = []
    async with connect(url, remembered, mode=LEGACY, session="s-1") as client:
        await client.set_logging_level("warning")
        await client.call_tool("levels_sync", {})
        # The request's own _meta wins over the session's level.
        await client.call_tool("levels_sync", {}, meta={"io.modelcontextprotocol/logLevel": "debug"})
    assert messages(remembered) == [
        ("warning", "running low on coffee"),
        ("debug", "looking closely"),
        ("info", "started"),
        ("warning", "running low on coffee"),
    ]


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_progress_reports_arrive_with_the_clients_token(
    gateway_factory: StartGateway, mode: str
) -> None:
    url = await start(gateway_factory)
    records: Records = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with connect(url, records, mode=mode) as client:
        result = await client.call_tool("progress", {"count": 3}, progress_callback=on_progress)
        got = list(progress)
        await client.call_tool("progress_sync", {"count": 2}, progress_callback=on_progress)
    assert result.structured_content == {"result": 3}
    assert got == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert progress[3:] == [(1, None, None), (2, None, None)]


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_a_function_logging_100k_lines_gets_its_cap_and_succeeds(
    gateway_factory: StartGateway, mode: str
) -> None:
    url = await start(gateway_factory)
    records: Records = []
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with connect(url, records, mode=mode, log_level="info") as client:
        arguments = {"lines": 100_000, "reports": 3000}
        result = await client.call_tool("log_flood", arguments, progress_callback=on_progress)
    assert not result.is_error and result.structured_content == {"result": 100_000}
    assert len(records) == MAX_LOG_EVENTS
    assert records[-1].level == "warning" and "limit of 1000 log records" in records[-1].data["message"]
    assert progress[-1] == 3000 and progress == sorted(progress)


async def test_a_generator_logs_while_its_items_are_progress(gateway_factory: StartGateway) -> None:
    url = await start(gateway_factory)
    records: Records = []
    progress: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with connect(url, records, log_level="info") as client:
        result = await client.call_tool("items_and_logs", {}, progress_callback=on_progress)
    assert [t.text for t in result.content if isinstance(t, types.TextContent)] == ["item 0", "item 1"]
    assert progress == ["item 0", "item 1"]
    assert messages(records) == [
        ("info", "making item 0"),
        ("info", "making item 1"),
        ("warning", "all made"),
    ]


def test_levels_map_both_ways() -> None:
    assert [mcp_level(level) for level in (5, 10, 20, 25, 30, 40, 50, 60, 70, 99)] == [
        "debug",
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
        "emergency",
    ]
    for level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"):
        assert mcp_level(python_level(level)) == level  # type: ignore[arg-type]
