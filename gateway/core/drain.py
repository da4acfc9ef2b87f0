"""The calls a gateway has in flight, so that stopping can wait for them and then cut them off.

A front door's own cut-off (uvicorn cancelling a request task, grpc.aio cancelling an RPC) would
leave the caller a 500 or a bare CANCELLED. Cutting the calls off here first turns each into an
`Unavailable` error, which every front door already renders (503 with Retry-After, UNAVAILABLE).
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from toolmesh.errors import Unavailable

#: Retry-After of a call cut off by shutdown: another gateway replica is likely up by then.
CUT_OFF_RETRY_AFTER = 1.0
_CUT_OFF = "the gateway stopped before the call finished (it may have run); try again"


class Drain:
    """Tracks the tasks running calls; `wait` lets them finish for a while, then cuts them off."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()
        self._cut: set[asyncio.Task[object]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        #: Set once the gateway is stopping: readiness answers 503 from then on.
        self.draining = False

    def begin(self) -> None:
        """The gateway is stopping: say so (readiness) before it refuses anything."""
        self.draining = True

    @property
    def inflight(self) -> int:
        return len(self._tasks)

    def track(self) -> _Tracked:
        """Run one call's body (`with drain.track():`); raises `Unavailable` if `wait` cuts it off."""
        return _Tracked(self)

    def _enter(self, task: asyncio.Task[object]) -> None:
        self._tasks.add(task)
        self._idle.clear()

    def _leave(self, task: asyncio.Task[object]) -> None:
        self._cut.discard(task)
        self._tasks.discard(task)
        if not self._tasks:
            self._idle.set()

    async def wait(self, grace: float) -> int:
        """Wait up to `grace` seconds for the calls in flight, then cut off the rest; their number."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace)
        late = [task for task in self._tasks if not task.done()]
        for task in late:
            self._cut.add(task)
            task.cancel()
        return len(late)


class _Tracked:
    """`Drain.track`'s context: a plain class, as a generator context manager costs a call
    measurably on the invoke path (bench/RESULTS.md)."""

    __slots__ = ("_drain", "_task")

    def __init__(self, drain: Drain) -> None:
        self._drain = drain
        self._task: asyncio.Task[object] | None = None

    def __enter__(self) -> None:
        task = asyncio.current_task()
        if task is not None:  # calls always run in a task
            self._task = task
            self._drain._enter(task)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        task = self._task
        if task is None:
            return
        drain = self._drain
        try:
            if kind is not None and issubclass(kind, asyncio.CancelledError) and task in drain._cut:
                # The cancellation was ours, not the caller's: the task goes on to answer.
                task.uncancel()
                raise Unavailable(_CUT_OFF, retry_after=CUT_OFF_RETRY_AFTER) from None
        finally:
            drain._leave(task)
