"""The core's drain: calls in flight finish within the grace, later ones are cut off as
`Unavailable`, and a caller's own cancellation stays a cancellation."""

from __future__ import annotations

import asyncio

import pytest

from toolmesh.errors import Unavailable
from toolmesh.gateway.core.drain import CUT_OFF_RETRY_AFTER, Drain


async def call(drain: Drain, seconds: float) -> str:
    with drain.track():
        await asyncio.sleep(seconds)
    return "done"


async def test_calls_that_finish_within_the_grace_are_not_cut() -> None:
    drain = Drain()
    assert await drain.wait(0) == 0
    calls = [asyncio.create_task(call(drain, 0.05)) for _ in range(3)]
    await asyncio.sleep(0)
    assert drain.inflight == 3
    assert await drain.wait(5) == 0
    assert [await c for c in calls] == ["done"] * 3
    assert drain.inflight == 0


async def test_calls_past_the_grace_end_with_a_retryable_error() -> None:
    drain = Drain()
    quick, slow = asyncio.create_task(call(drain, 0.01)), asyncio.create_task(call(drain, 30))
    await asyncio.sleep(0)
    assert await drain.wait(0.2) == 1
    assert await quick == "done"
    with pytest.raises(Unavailable, match="may have run") as cut:
        await slow
    assert cut.value.retry_after == CUT_OFF_RETRY_AFTER
    assert not slow.cancelled(), "the task answered instead of being cancelled"


async def test_a_callers_own_cancellation_is_not_turned_into_an_error() -> None:
    drain = Drain()
    task = asyncio.create_task(call(drain, 30))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert drain.inflight == 0
