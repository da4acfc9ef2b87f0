"""Calls made at once, sent to the store together: `Batcher`.

A store a round trip away (Redis over the network, SQLite on its own thread) costs each call a
write, a read and a wake-up; jobs that end together, or a trigger's batch of messages, need not
pay that each. One call is on its way at a time and carries everything submitted meanwhile, so
a lone call waits for nothing (no timer) and a busy gateway sends fewer, larger ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """`await batcher.submit(item)`: `item` goes in the next call of `send`, with every item
    submitted meanwhile (those of the same loop iteration; those submitted while the last call
    was on its way), at most `most` of them. `send` answers each item, in order, with its result
    or the exception to raise for it; an exception `send` raises is raised for each of its items.
    A submitter cancelled while it waits does not take its item back: it is sent all the same."""

    def __init__(self, send: Callable[[list[T]], Awaitable[Sequence[R | BaseException]]], most: int) -> None:
        self._send = send
        self._most = most
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._task: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, done))
        if self._task is None:
            self._task = asyncio.create_task(self._run())
        return await done

    async def _run(self) -> None:
        try:
            await asyncio.sleep(0)  # the items of this loop iteration join the first call
            while self._waiting:
                batch, self._waiting = self._waiting[: self._most], self._waiting[self._most :]
                try:
                    answers: Sequence[R | BaseException] = await self._send([item for item, _ in batch])
                except asyncio.CancelledError:
                    for _, done in batch:
                        done.cancel()
                    raise
                except Exception as exc:
                    answers = [exc] * len(batch)
                for (_, done), answer in zip(batch, answers, strict=True):
                    if done.done():
                        continue  # its submitter was cancelled
                    if isinstance(answer, BaseException):
                        done.set_exception(answer)
                    else:
                        done.set_result(answer)
        finally:
            self._task = None
            for _, done in self._waiting:  # only when cancelled: none is left otherwise
                done.cancel()
            self._waiting = []
