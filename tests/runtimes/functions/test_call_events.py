"""`ctx.logger` and `ctx.report_progress` on a context with and without a caller listening."""

from __future__ import annotations

import asyncio
import logging

import pytest

from toolmesh.runtimes.functions.call_events import (
    MAX_EXTRA_BYTES,
    MAX_MESSAGE_CHARS,
    CallEvent,
    EventChannel,
    Listener,
    LogEvent,
    ProgressEvent,
)
from toolmesh.runtimes.functions.context import Context


def context(level: int = logging.INFO, progress: bool = True) -> tuple[Context, list[CallEvent]]:
    events: list[CallEvent] = []
    channel = EventChannel(Listener(level, progress, events.append), "f", asyncio.get_running_loop())
    return Context(function="f", request_id="r-1", events=channel), events


async def test_records_still_reach_the_pods_log_naming_the_functions_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx, events = context(logging.WARNING)

    def the_function() -> None:
        ctx.logger.info("below the caller's level", extra={"city": "Paris"})
        ctx.logger.warning("at it")

    with caplog.at_level(logging.INFO, logger="toolmesh.functions"):
        the_function()
    assert [(r.funcName, r.getMessage(), r.request_id) for r in caplog.records] == [  # type: ignore[attr-defined]
        ("the_function", "below the caller's level", "r-1"),
        ("the_function", "at it", "r-1"),
    ]
    assert events == [LogEvent(logging.WARNING, "at it", "f")]


async def test_a_caller_may_want_more_than_the_pod_logs(caplog: pytest.LogCaptureFixture) -> None:
    ctx, events = context(logging.DEBUG)
    with caplog.at_level(logging.WARNING, logger="toolmesh.functions"):
        ctx.logger.debug("details")
    assert caplog.records == [] and events == [LogEvent(logging.DEBUG, "details", "f")]


async def test_long_messages_and_extras_are_cut_and_bad_formats_kept() -> None:
    ctx, events = context()
    ctx.logger.info("x" * (MAX_MESSAGE_CHARS + 10))
    ctx.logger.info("big", extra={"blob": "y" * MAX_EXTRA_BYTES})
    ctx.logger.info("%d items", "not a number")
    ctx.logger.info("odd", extra={"when": object})
    long, big, bad, odd = (e for e in events if isinstance(e, LogEvent))
    assert len(long.message) == MAX_MESSAGE_CHARS and long.message.endswith("…")
    assert "extra_truncated" in big.data() and "blob" not in big.data()
    assert bad.message == "%d items ('not a number',)"
    assert odd.data() == {"message": "odd", "when": str(object)}


async def test_report_progress_works_awaited_or_not_and_costs_nothing_unasked() -> None:
    ctx, events = context(progress=True)
    ctx.report_progress(1, total=2)
    await ctx.report_progress(2, total=2, message="done")
    assert events == [ProgressEvent(1, 2.0), ProgressEvent(2, 2.0, "done")]
    alone = Context(function="f", request_id="r")
    alone.report_progress(1)
    await alone.report_progress(2)
    unwanted, none = context(progress=False)
    await unwanted.report_progress(1)
    assert none == []


async def test_events_from_a_worker_thread_arrive_on_the_loop_in_order() -> None:
    ctx, events = context()

    def in_thread() -> None:
        for index in range(50):
            ctx.logger.info("line %d", index)
            ctx.report_progress(index)

    await asyncio.to_thread(in_thread)
    assert [e.message for e in events if isinstance(e, LogEvent)] == [f"line {i}" for i in range(50)]
    assert [e.progress for e in events if isinstance(e, ProgressEvent)] == list(range(50))
