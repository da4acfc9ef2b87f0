"""Frozen pods: found by a cheap ping and replaced.

A pod whose event loop stops (SIGSTOP, a C call that holds the GIL, an async function
that blocks the loop) keeps its connections open: calls to it end only at their
deadline, and nothing would replace it. Every `INTERVAL` seconds the replica set pings
each ready pod (a PING frame on its Unix socket, answered by the pod's event loop; the
gRPC health check for pods reached over gRPC). A pod that has answered no ping for
`UNRESPONSIVE_AFTER` seconds is reported, and the replica set kills it: its calls are
then handled like those of any pod that died (idempotent ones retried elsewhere), and a
replacement starts. A pod busy in worker threads still answers: its loop keeps running.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Protocol

#: Seconds between two pings of a pod (also the longest one ping may take).
INTERVAL = 0.5
#: Seconds without an answer after which a pod is taken for frozen.
UNRESPONSIVE_AFTER = 3.0


class Pingable(Protocol):
    async def ping(self, timeout: float) -> bool: ...


class Watched(Protocol):
    """A pod as the watch sees it (replicas.Replica)."""

    pid: int

    @property
    def pinger(self) -> Pingable: ...


async def watch(
    ready: Callable[[], Sequence[Watched]],
    unresponsive: Callable[[Watched], None],
    *,
    interval: float = INTERVAL,
    limit: float = UNRESPONSIVE_AFTER,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Ping the pods `ready()` names forever; call `unresponsive(pod)` for one that stopped answering."""
    answered: dict[int, float] = {}
    while True:
        await asyncio.sleep(interval)
        pods = list(ready())
        answers = await asyncio.gather(*(pod.pinger.ping(interval) for pod in pods))
        now = clock()
        for pod, ok in zip(pods, answers, strict=True):
            last = answered.setdefault(pod.pid, now)
            if ok:
                answered[pod.pid] = now
            elif now - last >= limit:
                answered.pop(pod.pid)
                unresponsive(pod)
        for pid in set(answered) - {pod.pid for pod in pods}:
            del answered[pid]
