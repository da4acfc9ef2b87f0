"""A pod's event loop, watched from a thread: async code that blocks it is named and contained.

An `async def` that calls blocking code (`time.sleep`, a blocking client, heavy CPU work)
stops the pod's event loop, and with it every other call on the pod. A heartbeat on the
loop notes the time every `tick`; a thread checks it. When the loop has not run for
`threshold` seconds, the thread looks at the loop thread's stack for the call whose code
is running there (each call's `_execute` frame, recorded in `RunningCalls`), and reports
it: a warning log line and `toolmesh_runtime_loop_blocks_total{function}` /
`toolmesh_runtime_loop_blocked_seconds{function,request_id}` (telemetry.py), once per stall.

The pod is not given up on while the loop is merely blocked: its liveness is answered by
another thread (liveness_socket.py), which reports the stall, so the gateway sends new
calls elsewhere meanwhile and the calls already here simply wait. Only when the blocking
call passes its own time limit is the pod condemned: it turns every new call away (as
refused, safe to send elsewhere), and its liveness report says so, with the calls it had
started, so the gateway replaces it and retries the others where that is safe.
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Protocol

from toolmesh.protocol.loop_report import LoopReport

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("toolmesh.runtime")

#: Longest time between two heartbeats on the loop (and two checks by the thread).
MAX_TICK = 0.1
#: How many frames of the loop thread's stack are searched for a call's frame.
MAX_DEPTH = 200


@dataclass(slots=True, eq=False)
class Running:
    """A call running now, as the watchdog's thread sees it."""

    function: str
    request_id: str
    #: Seconds the call may run, and when that passes (`time.monotonic()`).
    timeout: float
    deadline: float
    #: The executor's frame for this call: on the loop thread's stack while the call's code runs.
    frame: FrameType


class RunningCalls:
    """The calls in the executor now; written on the loop, read by the watchdog's thread."""

    def __init__(self) -> None:
        self._calls: dict[int, Running] = {}
        self._keys = itertools.count()
        #: Why the pod turns calls away to be replaced, once a call blocked its loop too long.
        self.condemned: str | None = None

    def enter(self, function: str, request_id: str, timeout: float) -> int:
        """Record a call starting in the caller's frame; returns the key for `leave`."""
        key = next(self._keys)
        deadline = time.monotonic() + timeout
        self._calls[key] = Running(function, request_id, timeout, deadline, sys._getframe(1))
        return key

    def leave(self, key: int) -> None:
        del self._calls[key]

    def snapshot(self) -> list[Running]:
        # list() of a dict's values runs in C without letting the loop thread in between.
        return list(self._calls.values())

    def on_stack(self, top: FrameType | None) -> Running | None:
        """The innermost call whose frame is on the stack that `top` ends (a ctx.invoke runs
        inside its caller: the innermost is the one whose code is running)."""
        frames = {id(call.frame): call for call in self.snapshot()}
        frame = top
        for _ in range(MAX_DEPTH):
            if frame is None:
                return None
            found = frames.get(id(frame))
            if found is not None and found.frame is frame:
                return found
            frame = frame.f_back
        return None


class StallCounter(Protocol):
    """Where stalls are counted (telemetry.LoopMetrics)."""

    def blocked(self, function: str, request_id: str, seconds: float, *, first: bool) -> None: ...


@dataclass(slots=True)
class Stall:
    """The loop has not run since `since` (`time.monotonic()`)."""

    since: float
    blocked: float
    call: Running | None
    where: str


def where(frame: FrameType | None) -> str:
    """A frame's place, "file:line in function"."""
    if frame is None:
        return "?"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


class LoopWatchdog:
    """Watches one event loop from a thread; `report()` says how it is (for liveness_socket)."""

    def __init__(
        self,
        running: RunningCalls,
        threshold: float,
        metrics: StallCounter | None = None,
        *,
        unnamed_limit: float,
        unsent: Callable[[], Iterable[str]] = tuple,
        on_condemned: Callable[[str], None] | None = None,
    ) -> None:
        """`threshold`: seconds the loop may go without running before it is reported.
        `unnamed_limit`: seconds a stall outside any call may last before the pod is condemned.
        `unsent`: request ids of calls that finished but whose answers have not left the pod.
        `on_condemned(reason)` runs on the loop when it runs again after the pod was condemned
        (a pod nobody replaced in the meantime drains and exits, to be replaced)."""
        self.running = running
        self.threshold = threshold
        self._metrics = metrics
        self._unnamed_limit = unnamed_limit
        self._unsent = unsent
        self._on_condemned = on_condemned
        self._tick = min(MAX_TICK, threshold / 4)
        self._beat = time.monotonic()
        self._stall: Stall | None = None
        #: The stall that condemned the pod, reported even if the loop runs again.
        self._condemning: Stall | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._timer: asyncio.TimerHandle | None = None
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the heartbeat on `loop` (called from its thread) and the watching thread."""
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._heartbeat()
        self._thread = threading.Thread(target=self._watch, name="toolmesh-loop-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._timer is not None:
            self._timer.cancel()

    def _heartbeat(self) -> None:
        self._beat = time.monotonic()
        assert self._loop is not None
        self._timer = self._loop.call_later(self._tick, self._heartbeat)

    def _watch(self) -> None:
        while not self._stopped.wait(self._tick):
            self.check(time.monotonic())

    def check(self, now: float) -> None:
        """Look at the loop once: note a stall starting, going on or ending."""
        beat = self._beat
        with self._lock:
            stall = self._stall
            if stall is not None and stall.since != beat:
                self._ended(stall, beat)
                stall = self._stall = None
            if now - beat < self.threshold + self._tick:
                return
            if stall is None:
                stall = self._stall = self._started(beat, now)
            stall.blocked = now - beat
            self._count(stall, first=False)
            if self.running.condemned is None:
                self._condemn_if_overdue(stall, now)

    def _started(self, since: float, now: float) -> Stall:
        top = sys._current_frames().get(self._loop_thread)
        call = self.running.on_stack(top)
        stall = Stall(since, now - since, call, where(top))
        blocked_ms = round(stall.blocked * 1000)
        if call is None:
            log.warning(
                f"the event loop has not run for {blocked_ms} ms, outside any call (at {stall.where})",
                extra={"blocked_ms": blocked_ms, "where": stall.where},
            )
        else:
            log.warning(
                f"{call.function}: its async code has blocked the event loop for {blocked_ms} ms "
                f"(at {stall.where}); the pod's other calls wait meanwhile. Run blocking code in a "
                "`def` function or with `await asyncio.to_thread(...)`",
                extra=self._fields(stall),
            )
        self._count(stall, first=True)
        return stall

    def _ended(self, stall: Stall, resumed: float) -> None:
        stall.blocked = max(stall.blocked, resumed - stall.since - self._tick)
        self._count(stall, first=False)
        name = stall.call.function if stall.call is not None else "code outside any call"
        log.warning(
            f"the event loop runs again after {name} blocked it for {stall.blocked:.2f} s",
            extra=self._fields(stall),
        )

    def _condemn_if_overdue(self, stall: Stall, now: float) -> None:
        call = stall.call
        if call is None:
            if stall.blocked < self._unnamed_limit:
                return
            reason = f"its event loop was blocked for {stall.blocked:.1f} s outside any call"
        else:
            if now < call.deadline:
                return
            reason = f"{call.function} blocked its event loop past the call's time limit ({call.timeout:g} s)"
        # Set before any report says so: from now on no call starts here, so the calls the
        # report lists as started are all that ran.
        self.running.condemned = reason
        self._condemning = stall
        log.warning(f"{reason}; turning calls away until this pod is replaced", extra=self._fields(stall))
        if self._on_condemned is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._on_condemned, reason)

    def _count(self, stall: Stall, *, first: bool) -> None:
        if self._metrics is not None:
            call = stall.call
            function, request_id = (call.function, call.request_id) if call is not None else ("", "")
            self._metrics.blocked(function, request_id, stall.blocked, first=first)

    @staticmethod
    def _fields(stall: Stall) -> dict[str, object]:
        fields: dict[str, object] = {"blocked_ms": round(stall.blocked * 1000), "where": stall.where}
        if stall.call is not None:
            fields |= {"function": stall.call.function, "request_id": stall.call.request_id}
        return fields

    def report(self) -> LoopReport:
        """How the loop is now: running (an empty report), or stalled and by which call; once
        condemned, the stall that condemned the pod, and the calls it had started."""
        self.check(time.monotonic())
        with self._lock:
            stall = self._stall if self._stall is not None else self._condemning
            if stall is None:
                return LoopReport()
            call = stall.call
            condemned = self.running.condemned is not None
            started: frozenset[str] = frozenset()
            if condemned:
                started = frozenset(c.request_id for c in self.running.snapshot()) | set(self._unsent())
            return LoopReport(
                blocked=round(stall.blocked, 3),
                function=call.function if call is not None else "",
                request_id=call.request_id if call is not None else "",
                timeout=call.timeout if call is not None else 0.0,
                where=stall.where,
                condemned=condemned,
                started=started,
            )
