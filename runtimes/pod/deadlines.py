"""Per-call time limits that cost almost nothing when calls finish in time.

`asyncio.timeout` schedules and cancels one timer per call, which is a third of
a pod's own work for a call that returns at once. Here calls share coarse time
slots instead: a call registers in the slot its deadline falls in (a set add),
leaves it when done (a set discard), and one timer per slot cancels whatever
is still registered when the slot ends. Limits fire up to `RESOLUTION` seconds
late, which no caller of a tool can tell from network jitter.

Sync functions run in `WorkerThreads`, which count the threads a limit abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

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


class WorkerThreads:
    """The threads sync functions run in. A deadline can abandon a call running in one but
    not stop it (Python cannot stop a thread), so the thread stays *stuck* until the function
    returns; `on_stuck(threads)` is called once, when `max_stuck` threads are stuck at once."""

    def __init__(self, workers: int, max_stuck: int, on_stuck: Callable[[int], None] | None) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="toolmesh-fn")
        #: Work handed to the pool and not finished yet.
        self._work: set[Future[Any]] = set()
        self._max_stuck = max_stuck
        self._on_stuck = on_stuck
        #: Threads running calls their callers no longer wait for.
        self.stuck = 0
        #: True once `max_stuck` was reached; it stays so.
        self.overwhelmed = False

    @property
    def busy(self) -> int:
        """Threads running a function now; idle pool threads are not counted."""
        return sum(1 for work in list(self._work) if work.running())

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in a thread, with the caller's contextvars (e.g. tracing) visible in it."""
        work = self._submit(contextvars.copy_context().run, fn, *args)
        try:
            return await asyncio.wrap_future(work)
        except asyncio.CancelledError:
            if work.running():
                self._stuck_in(work)
            raise

    def run_later(self, fn: Callable[..., Any], *args: Any) -> None:
        """`fn(*args)` in a thread, nobody waiting; dropped once the pool is shut down."""
        with contextlib.suppress(RuntimeError):
            self._submit(fn, *args)

    def shutdown(self) -> None:
        """Stop the idle threads; threads stuck in a function are abandoned."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        work = self._pool.submit(fn, *args)
        self._work.add(work)
        work.add_done_callback(self._work.discard)
        return work

    def _stuck_in(self, work: Future[Any]) -> None:
        self.stuck += 1
        loop = asyncio.get_running_loop()

        def unstuck(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the pod is exiting
                loop.call_soon_threadsafe(self._unstuck)

        work.add_done_callback(unstuck)
        if self.stuck >= self._max_stuck and not self.overwhelmed:
            self.overwhelmed = True
            if self._on_stuck is not None:
                self._on_stuck(self.stuck)

    def _unstuck(self) -> None:
        self.stuck -= 1
