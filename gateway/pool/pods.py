"""One pod of a runtime as the gateway holds it: where it is, its clients, its state and load;
and how the pool reaches pods for a unary call: one seam, two roads, one retry loop.

`PodTransport` is what the pool calls; `SocketClient` (the Unix-socket frames, for the pods the
gateway forks) and `RuntimeClient` (gRPC, for every pod) plug into it, so the pool never picks
a road per call. Streams, listings and health stay on gRPC (`RuntimeClient`).

`with_retries` is the pool's one retry loop (ReplicaSet's and RemoteRuntime's): each attempt
decides for itself whether the call may go to another pod (`TryElsewhere`), which is safe when
its function is idempotent or no pod ran any of it (`retry_is_safe`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from toolmesh.errors import ToolmeshError, Unavailable
from toolmesh.gateway.pool import liveness
from toolmesh.gateway.pool.launcher import Spawned
from toolmesh.gateway.pool.liveness import RUNNING, LivenessClient
from toolmesh.gateway.pool.runtime_client import PodUnreachable, RuntimeClient
from toolmesh.gateway.pool.socket_client import SocketClient
from toolmesh.protocol.calls import REFUSED, Call
from toolmesh.protocol.loop_report import LoopReport
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.pod.pod_process import kill_group

T = TypeVar("T")
STARTING, READY, DRAINING, GONE = "starting", "ready", "draining", "gone"
log = logging.getLogger("toolmesh.pool")
#: Seconds a pod has to answer a metrics request (Prometheus' own scrape timeout is longer).
METRICS_TIMEOUT = 5.0


class PodTransport(Protocol):
    """A road to one pod (or one balanced address) for unary calls."""

    async def invoke(self, call: Call, timeout: float) -> Result:
        """Run `call` within `timeout` seconds. A pod that cannot be reached, or is lost
        mid-call, raises `PodUnreachable`; the pod's own refusals raise their toolmesh error."""
        ...

    async def ping(self, timeout: float) -> bool:
        """Whether the pod's event loop answers within `timeout` seconds."""
        ...

    async def close(self) -> None: ...


def retry_is_safe(error: Unavailable, idempotent: bool) -> bool:
    """A call may go to another pod if its function is idempotent or no pod ran any of it."""
    return idempotent or error.details.get(REFUSED) is True


class TryElsewhere(Exception):
    """Raised by an attempt whose call may be sent again; `error` is what the caller gets when
    no attempt is left."""

    def __init__(self, error: ToolmeshError) -> None:
        super().__init__(error.message)
        self.error = error


async def with_retries(attempt: Callable[[], Awaitable[T]], tries: int, runtime: str) -> T:
    """Run `attempt` until it returns, raises anything but `TryElsewhere`, or `tries` are spent."""
    for left in range(tries - 1, -1, -1):
        try:
            return await attempt()
        except TryElsewhere as retry:
            if not left:
                raise retry.error from None
        log.info("retrying a call on another pod", extra={"runtime": runtime})
    raise AssertionError("unreachable")


@dataclass(eq=False)
class Replica:
    """One pod of a runtime."""

    pid: int
    address: str
    #: The Unix socket of the pod's /metrics (for a gateway that will expose pods' metrics).
    metrics_socket: str | None
    #: gRPC to the pod: streams, listings, and unary calls when the runtime has no socket.
    client: RuntimeClient
    #: The road for unary calls and pings: the Unix socket when the runtime uses it, else `client`.
    transport: PodTransport
    started_at: float
    #: Where a thread of the pod answers liveness pings (liveness.py), when it has one.
    liveness: LivenessClient | None = None
    state: str = READY
    inflight: int = 0
    last_used: float = 0.0
    #: Calls it took, and those it answered (with a result or an error of the function's own).
    taken: int = 0
    served: int = 0
    #: Why the gateway killed it, when it did: "unresponsive" (it answered no liveness
    #: ping) or "blocked" (a call blocked its event loop past the call's time limit).
    killed_for: str | None = None
    #: Its last liveness report: whether its event loop is blocked, and by which call.
    loop: LoopReport = RUNNING

    async def fetch_metrics(self) -> bytes | None:
        """The pod's Prometheus exposition, read from its metrics socket; None if it answers none."""
        if self.metrics_socket is None:
            return None
        with contextlib.suppress(OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            async with asyncio.timeout(METRICS_TIMEOUT):
                reader, writer = await asyncio.open_unix_connection(self.metrics_socket)
                try:
                    writer.write(b"GET /metrics HTTP/1.1\r\nHost: pod\r\nConnection: close\r\n\r\n")
                    answer = await reader.read()
                finally:
                    writer.close()
            head, _, body = answer.partition(b"\r\n\r\n")
            if head.startswith(b"HTTP/1.1 200"):
                return body
        return None

    @classmethod
    def of(cls, runtime: str, spawned: Spawned, now: float) -> Replica:
        """The pod a template just started, with its clients."""
        client = RuntimeClient(runtime, spawned.address)
        transport: PodTransport = SocketClient(runtime, spawned.socket) if spawned.socket else client
        liveness = LivenessClient(spawned.liveness) if spawned.liveness else None
        return cls(
            spawned.pid,
            spawned.address,
            spawned.metrics_socket,
            client,
            transport,
            now,
            liveness,
            last_used=now,
        )

    @property
    def blocked(self) -> bool:
        """Its event loop is blocked (by a call's async code), as it last said."""
        return self.loop.blocked > 0

    def note(self, report: LoopReport) -> str:
        """Take its latest liveness report: "began" or "ended" when it tells of a stall of its
        event loop starting or ending, else ""."""
        was, self.loop = self.loop, report
        if liveness.stall_began(was, report):
            return "began"
        return "ended" if was.blocked and not report.blocked else ""

    def kill(self, reason: str, runtime: str) -> None:
        """Take it out of rotation and kill it with its group (the subprocesses its functions
        started), so that it is replaced like any dead pod; `reason` is `killed_for`'s."""
        if self.killed_for is None and self.state != GONE:
            why = liveness.why_killed(reason, self.loop)
            log.warning(f"runtime {runtime!r}: pod {self.pid} {why}; killing it", extra={"runtime": runtime})
            self.state, self.killed_for = DRAINING, reason
            kill_group(self.pid)

    def died_mid_call(self, runtime: str, error: PodUnreachable) -> Unavailable:
        """What a caller sees when this pod went away while running its call."""
        if error.details.get(REFUSED) is True:
            return Unavailable(error.message, retry_after=error.retry_after, details=error.details)
        return Unavailable(
            f"pod {self.pid} of runtime {runtime!r} died mid-call; the call may have run "
            f"(retry if that is safe: {error.message})",
            retry_after=1.0,
        )

    async def check(self, timeout: float) -> LoopReport | None:
        """How its event loop is (liveness.Watched), or None if it did not answer in time."""
        if self.liveness is not None:
            return await self.liveness.ping(timeout)
        return RUNNING if await self.transport.ping(timeout) else None

    async def close(self) -> None:
        if self.liveness is not None:
            self.liveness.close()
        if self.transport is not self.client:
            await self.transport.close()
        await self.client.close()
