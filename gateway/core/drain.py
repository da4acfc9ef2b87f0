"""The calls a gateway has in flight, so that stopping can wait for them and then cut them off.

A front door's own cut-off (uvicorn cancelling a request task, grpc.aio cancelling an RPC) would
leave the caller a 500 or a bare CANCELLED. Cutting the calls off here first turns each into an
`Unavailable` error, which every front door already renders (503 with Retry-After, UNAVAILABLE).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

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

    @contextlib.contextmanager
    def track(self) -> Iterator[None]:
        """Run one call's body; raises `Unavailable` if `wait` cuts it off."""
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - calls always run in a task
            yield
            return
        self._tasks.add(task)
        self._idle.clear()
        try:
            yield
        except asyncio.CancelledError:
            if task not in self._cut:
                raise
            # The cancellation was ours, not the caller's: the task goes on to answer.
            task.uncancel()
            raise Unavailable(_CUT_OFF, retry_after=CUT_OFF_RETRY_AFTER) from None
        finally:
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
