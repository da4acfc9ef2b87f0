"""The books of held calls: how many wait for a pod, how long, and the cold starts among them.

Both kinds of runtime hold calls while no pod can take them (pods the gateway forks,
replicas.py; pods elsewhere, remote.py); this is what they share: the bounded
queue, `toolmesh_pending_requests`, the queue-wait histogram, and cold starts,
counted once per stretch with no pod and timed from the first call of it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import toolmesh.tracing as tracing
from toolmesh.errors import Overloaded, Unavailable
from toolmesh.gateway.pool.pool_metrics import PoolMetrics


class HeldCalls:
    def __init__(
        self,
        runtime: str,
        max_queue: int,
        metrics: PoolMetrics,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runtime = runtime
        self.max_queue = max_queue
        self.waiting = 0
        self._clock = clock
        self._cold_since: float | None = None
        self._cold_starts = metrics.cold_starts.labels(runtime)
        self._cold_start_seconds = metrics.cold_start_seconds.labels(runtime)
        self._queue_wait = metrics.queue_wait_seconds.labels(runtime)

    @contextlib.contextmanager
    def hold(self, *, cold: bool) -> Iterator[float]:
        """Count a call as held while the block runs (which raises Unavailable if no pod comes);
        yields when it arrived. `cold`: no pod is up, so this call may be the first of a cold
        start. Overloaded when the queue is full."""
        if self.waiting >= self.max_queue:
            raise Overloaded(
                f"runtime {self.runtime!r} already has {self.max_queue} calls waiting for a pod",
                retry_after=1.0,
            )
        arrived = self._clock()
        if cold and self._cold_since is None:
            self._cold_since = arrived
            self._cold_starts.inc()
        self.waiting += 1
        gave_up = False
        try:
            with tracing.span(
                "toolmesh.queue_wait", {"toolmesh.runtime": self.runtime, "toolmesh.cold": cold}
            ):
                if cold:
                    # No pod is up: this call waits for one to start (spawned in the background).
                    with tracing.span("toolmesh.cold_start", {"toolmesh.runtime": self.runtime}):
                        yield arrived
                else:
                    yield arrived
        except Unavailable:
            gave_up = True
            raise
        finally:
            self.waiting -= 1
            self._queue_wait.observe(self._clock() - arrived)
            if gave_up and self.waiting == 0:
                self._cold_since = None  # no call waits for this cold start any more

    def pod_ready(self) -> None:
        """A pod is up: a cold start in progress ends here."""
        if self._cold_since is not None:
            self._cold_start_seconds.observe(self._clock() - self._cold_since)
            self._cold_since = None
