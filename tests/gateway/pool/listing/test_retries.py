"""Reading a pod's changed functions again when it fails: bounded attempts, with backoff."""

from __future__ import annotations

import logging
import time

import pytest

from toolmesh.errors import FunctionTimeout, Unavailable
from toolmesh.gateway.pool.listing.retries import (
    LISTING_ATTEMPTS,
    ListingMissed,
    backoff,
    read_with_retries,
)


class Flaky:
    """A reading that fails its first `failures` attempts, each with `error`."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.attempts: list[float] = []

    async def __call__(self) -> str:
        self.attempts.append(time.monotonic())
        if len(self.attempts) <= self.failures:
            raise self.error
        return "listed"


async def test_a_reading_that_fails_is_tried_again_after_a_growing_wait() -> None:
    read = Flaky(3, Unavailable("busy"))
    assert await read_with_retries(read, "clock", "its functions", first=0.02) == "listed"
    assert len(read.attempts) == 4
    waits = [later - earlier for earlier, later in zip(read.attempts, read.attempts[1:], strict=False)]
    assert waits[0] >= 0.02 and waits[1] >= 0.04 and waits[2] >= 0.08


async def test_it_gives_up_after_its_attempts_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    read = Flaky(100, FunctionTimeout("took too long"))
    with caplog.at_level(logging.WARNING, "toolmesh.pool"):
        assert await read_with_retries(read, "clock", "its functions", first=0.001) is None
    assert len(read.attempts) == LISTING_ATTEMPTS
    assert "giving up until it changes again" in caplog.records[-1].getMessage()
    assert "took too long" in caplog.records[-1].getMessage()


async def test_another_pods_answer_is_tried_again_and_a_reading_no_longer_wanted_stops() -> None:
    read = Flaky(1, ListingMissed("pod b answered"))
    assert await read_with_retries(read, "clock", "its functions", first=0.001) == "listed"
    wanted = [True]
    stopped = Flaky(100, Unavailable("busy"))

    async def once_then_unwanted() -> str:
        wanted[0] = False
        return await stopped()

    assert await read_with_retries(once_then_unwanted, "clock", "x", wanted=lambda: wanted[0]) is None
    assert len(stopped.attempts) == 1


def test_the_wait_doubles_up_to_its_cap() -> None:
    assert [backoff(n, 0.1) for n in (1, 2, 3)] == [0.1, 0.2, 0.4]
    assert backoff(20) == 2.0
