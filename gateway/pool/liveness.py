"""Frozen pods: found by a cheap ping and replaced. Blocked event loops: seen and waited out.

A pod that stops as a whole (SIGSTOP, a C call that holds the GIL) keeps its connections
open: calls to it would end only at their deadline, and nothing would replace it. Every
`INTERVAL` seconds the replica set pings each running pod. The pods it starts answer on a
liveness socket of their own, from a thread (runtimes/pod/isolation/liveness_socket.py),
not from their event loop; other pods answer a PING frame or the gRPC health check on
their loop. A pod that has answered no ping for `UNRESPONSIVE_AFTER` seconds is reported,
and the replica set kills it: its calls are then handled like those of any pod that died
(idempotent ones retried elsewhere), and a replacement starts.

A pod whose event loop is blocked by a call's async code (`time.sleep` in an `async def`)
still answers, with a `LoopReport` naming the call. The replica set sends new calls to
other pods until the loop runs again, and lets the calls already there wait. Only when
the report says the pod is condemned (the blocking call passed its time limit) is the pod
replaced: the blocking call gets a timeout error naming its function and what it did
(`blocked_call_error`), and the pod's other calls go to another pod where that is safe
(`lost_call`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from toolmesh.errors import FunctionTimeout
from toolmesh.gateway.pool.runtime_client import PodUnreachable
from toolmesh.protocol.calls import REFUSED
from toolmesh.protocol.loop_report import MAX_LINE, LoopReport

#: Seconds between two pings of a pod (also the longest one ping may take).
INTERVAL = 0.5
#: Seconds without an answer after which a pod is taken for frozen.
UNRESPONSIVE_AFTER = 3.0
#: What a pod that answers says when it has no liveness socket to say more: its loop runs.
RUNNING = LoopReport()


class Watched(Protocol):
    """A pod as the watch sees it (pods.Replica)."""

    pid: int

    async def check(self, timeout: float) -> LoopReport | None:
        """How its loop is, or None if it did not answer within `timeout` seconds."""
        ...


class LivenessClient:
    """Pings one pod's liveness socket; connects on first use and again after a failure."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def ping(self, timeout: float) -> LoopReport | None:
        try:
            async with asyncio.timeout(timeout):
                if self._reader is None or self._writer is None:
                    self._reader, self._writer = await asyncio.open_unix_connection(self.path, limit=MAX_LINE)
                self._writer.write(b"?")
                line = await self._reader.readline()
            return LoopReport.decode(line)
        except (OSError, TimeoutError, ValueError):
            # Unanswered or garbled: a late answer must not be taken for the next one's.
            self.close()
            return None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


async def watch(
    ready: Callable[[], Sequence[Watched]],
    unresponsive: Callable[[Watched], None],
    reported: Callable[[Watched, LoopReport], None],
    *,
    interval: float = INTERVAL,
    limit: float = UNRESPONSIVE_AFTER,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Ping the pods `ready()` names forever; `reported(pod, report)` for every answer, and
    `unresponsive(pod)` for one that stopped answering."""
    answered: dict[int, float] = {}
    while True:
        await asyncio.sleep(interval)
        pods = list(ready())
        answers = await asyncio.gather(*(pod.check(interval) for pod in pods))
        now = clock()
        for pod, report in zip(pods, answers, strict=True):
            last = answered.setdefault(pod.pid, now)
            if report is not None:
                answered[pod.pid] = now
                with contextlib.suppress(Exception):  # one pod's report must not end the watch
                    reported(pod, report)
            elif now - last >= limit:
                answered.pop(pod.pid)
                unresponsive(pod)
        for pid in set(answered) - {pod.pid for pod in pods}:
            del answered[pid]


def blocked_call_error(report: LoopReport, pid: int) -> FunctionTimeout:
    """What the call whose async code blocked its pod's loop past its time limit gets."""
    return FunctionTimeout(
        f"{report.function} did not finish within {report.timeout:g} s: its async code blocked its "
        f"pod's event loop (at {report.where}), so pod {pid} was replaced. Blocking code belongs in a "
        "`def` function (which runs in a worker thread) or in `await asyncio.to_thread(...)`"
    )


def blocker(report: LoopReport) -> str:
    """The call a report names as blocking the loop, for a message."""
    if not report.function:
        return "code outside any call"
    return f"{report.function} (request {report.request_id})"


def stall_began(was: LoopReport, report: LoopReport) -> bool:
    """Whether `report` tells of a stall `was` (the pod's previous report) did not."""
    return report.blocked > 0 and (not was.blocked or report.blocked < was.blocked)


def stall_message(runtime: str, pid: int, report: LoopReport) -> str:
    return (
        f"runtime {runtime!r}: {blocker(report)} blocks the event loop of pod {pid} ({report.where}); "
        "its calls wait, new ones go to other pods"
    )


def why_killed(reason: str, report: LoopReport) -> str:
    if reason == "unresponsive":
        return f"answered no ping for {UNRESPONSIVE_AFTER:g} s (frozen)"
    return f"is replaced: {blocker(report)} blocks its event loop past the call's time limit"


def lost_call(report: LoopReport, request_id: str, error: PodUnreachable, pid: int) -> PodUnreachable:
    """What a call that lost its pod gets when the pod was replaced for a blocked loop: a call
    the pod never started, a refusal (safe to send to another pod); one it started, that it
    may have run. The blocking call itself gets its timeout (raised)."""
    if not report.condemned:
        return error
    if request_id == report.request_id:
        raise blocked_call_error(report, pid)
    why = f"pod {pid} was replaced because {blocker(report)} blocked its event loop past its time limit"
    if request_id not in report.started:
        return PodUnreachable(f"{why}; this call never started there", retry_after=0, details={REFUSED: True})
    return PodUnreachable(f"{why}; this call may have run", retry_after=1.0)


def timed_out(report: LoopReport, request_id: str, error: FunctionTimeout, pid: int) -> FunctionTimeout:
    """A call's timeout, saying so when its pod's loop was blocked (by itself or another call)."""
    if not report.blocked:
        return error
    if request_id == report.request_id:
        return blocked_call_error(report, pid)
    return FunctionTimeout(f"{error.message}: its pod's event loop was blocked by {blocker(report)}")
