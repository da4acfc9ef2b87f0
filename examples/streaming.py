"""Streaming functions: generators whose items reach the caller as they are made.

Each value a generator yields becomes one content item of the result: a string
becomes text, a pydantic model or a dict becomes JSON. Over ``InvokeStream`` the
caller receives every item as soon as it is yielded, then the final result; a
plain ``Invoke`` collects them all into one result.

Sync generators run in worker threads, async ones on the event loop; both are
closed if the caller goes away or the time limit passes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from typing import Annotated

from pydantic import BaseModel, Field

import toolmesh

_SPACE = re.compile(r"\s")


class Progress(BaseModel):
    """How far a job has got."""

    step: int
    total: int
    percent: int
    name: str
    done: bool


@toolmesh.function(
    read_only=True,
    idempotent=True,
    examples=[
        "stream this text back to me in chunks",
        "send the text piece by piece as a stream",
        "echo this paragraph as a stream of chunks of 50 characters",
    ],
)
def stream_text(
    text: Annotated[str, Field(min_length=1)],
    chunk_size: Annotated[int, Field(ge=10, le=10_000)] = 200,
) -> Iterator[str]:
    """Stream a long text in chunks, breaking between words, as a chat reply would arrive.

    Joining the chunks gives back the text exactly.

    Args:
        text: The text to stream.
        chunk_size: The longest a chunk may be, in characters (a longer word is sent whole).
    """
    start = 0
    while start < len(text):
        end = _chunk_end(text, start, chunk_size)
        yield text[start:end]
        start = end


def _chunk_end(text: str, start: int, size: int) -> int:
    """After the last whitespace within `size` characters, or after a word too long to fit."""
    if start + size >= len(text):
        return len(text)
    spaces = [match.end() for match in _SPACE.finditer(text, start, start + size)]
    if spaces:
        return spaces[-1]
    beyond = _SPACE.search(text, start + size)
    return beyond.end() if beyond else len(text)


@toolmesh.function(
    read_only=True,
    timeout=90,
    examples=[
        "count down from 10",
        "start a countdown of 5 seconds",
        "do a countdown from 3 to zero",
    ],
)
async def countdown(
    start: Annotated[int, Field(ge=1, le=60)] = 5,
    interval: Annotated[float, Field(ge=0, le=1)] = 1.0,
) -> AsyncIterator[str]:
    """Count down to zero, one line per tick: a timer a user interface can show live.

    Args:
        start: The number to count down from, 1 to 60.
        interval: Seconds between ticks, up to 1.
    """
    for remaining in range(start, 0, -1):
        yield f"{remaining}..."
        await asyncio.sleep(interval)
    yield "Time's up!"


@toolmesh.function(
    timeout=60,
    examples=[
        "run a job with the steps fetch, build and deploy",
        "start a background job: extract, transform, load",
        "execute the steps download and unpack and report progress",
    ],
)
async def run_job(
    steps: Annotated[list[str], Field(min_length=1, max_length=20)],
    seconds_per_step: Annotated[float, Field(ge=0, le=2)] = 0.5,
) -> AsyncIterator[Progress]:
    """Run a (simulated) job step by step, reporting progress after each one.

    This is how a slow tool keeps its caller informed instead of going silent until it
    is done: every step yields a progress report as structured JSON.

    Args:
        steps: The names of the job's steps, in order, e.g. ["download", "resize", "upload"].
        seconds_per_step: How long each simulated step takes, up to 2 seconds.
    """
    for number, name in enumerate(steps, start=1):
        await asyncio.sleep(seconds_per_step)
        yield Progress(
            step=number,
            total=len(steps),
            percent=number * 100 // len(steps),
            name=name,
            done=number == len(steps),
        )
