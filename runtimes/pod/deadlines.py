"""Per-call time limits that cost almost nothing when calls finish in time.

`asyncio.timeout` schedules and cancels one timer per call, which is a third of
a pod's own work for a call that returns at once. Here calls share coarse time
slots instead: a call registers in the slot its deadline falls in (a set add),
leaves it when done (a set discard), and one timer per slot cancels whatever
is still registered when the slot ends. Limits fire up to `RESOLUTION` seconds
late, which no caller of a tool can tell from network jitter.
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType

#: Width of a slot, in seconds: the most a limit may fire late.
RESOLUTION = 0.01


class Limit:
    """The time limit of one task; use as `async with deadlines.limit(seconds):`."""

    __slots__ = ("_deadlines", "_slot", "_task", "expired")

    def __init__(self, deadlines: Deadlines, task: asyncio.Task[object], slot: int) -> None:
        self._deadlines = deadlines
        self._task = task
        self._slot = slot
        #: True once the limit has cancelled the task.
        self.expired = False

    async def __aenter__(self) -> Limit:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self._deadlines.leave(self._slot, self)
        if self.expired and kind is asyncio.CancelledError and self._task.uncancel() == 0:
            # Our cancellation, not the caller's: report it the way asyncio.timeout does.
            raise TimeoutError from exc
        return False

    def fire(self) -> None:
        self.expired = True
        self._task.cancel()


class Deadlines:
    """The time slots of one event loop."""

    def __init__(self) -> None:
        self._slots: dict[int, set[Limit]] = {}

    def limit(self, seconds: float) -> Limit:
        """A limit of `seconds` for the current task."""
        task = asyncio.current_task()
        assert task is not None, "a limit needs a running task"
        loop = task.get_loop()
        slot = math.ceil((loop.time() + seconds) / RESOLUTION)
        limit = Limit(self, task, slot)
        members = self._slots.get(slot)
        if members is None:
            members = self._slots[slot] = set()
            loop.call_at(slot * RESOLUTION, self._expire, slot)
        members.add(limit)
        return limit

    def leave(self, slot: int, limit: Limit) -> None:
        members = self._slots.get(slot)
        if members is not None:
            members.discard(limit)

    def _expire(self, slot: int) -> None:
        for limit in self._slots.pop(slot, ()):
            limit.fire()
