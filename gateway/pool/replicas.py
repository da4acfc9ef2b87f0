"""The pods of one runtime: started on demand, balanced, scaled up and down, replaced.

A call takes the ready pod with the fewest calls in flight (ties go to the oldest, so light
traffic packs onto few pods and the rest go idle). When no pod can take it (none running, or
all at their in-flight limit) the call is held, in a bounded queue and for a bounded time,
while a pod starts: this is the activator of Knative, and how a runtime scales from zero.

Scaling follows demand: while calls in flight plus held calls exceed
`target_concurrency` per pod, more pods start (up to `max_replicas`); a pod idle
for `idle_timeout` is drained and stopped (down to `min_replicas`, zero by
default). A pod whose event loop a call's async code blocks takes no new calls until it
runs again, and is replaced only when that call passes its time limit (liveness.py).

Faults: a pod that ends unasked is taken out of rotation at once and a
replacement starts when demand or `min_replicas` asks for one, while calls are
held as for a cold start. Its in-flight calls to idempotent functions go to
another pod (or wait for the replacement); the others end with a retryable
`Unavailable` saying the pod died mid-call and the call may have run. A pod
death is not a crash loop: only pods that fail to start (never ready, or dead
on their own within `STARTUP_GRACE` before taking a call) back off,
exponentially. A template that dies or hangs is replaced (template_keeper.py),
its pods drained, and calls held the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import Any

from toolmesh.config import RuntimeConfig
from toolmesh.errors import FunctionTimeout, ToolmeshError, Unavailable
from toolmesh.gateway.pool import liveness, pods
from toolmesh.gateway.pool.activator import HeldCalls
from toolmesh.gateway.pool.launcher import Spawned, TemplateProcess
from toolmesh.gateway.pool.pods import DRAINING, GONE, READY, STARTING, Replica
from toolmesh.gateway.pool.pool_metrics import PoolMetrics, pod_exit_reason
from toolmesh.gateway.pool.runtime_client import PodUnreachable
from toolmesh.gateway.pool.template_keeper import StartTemplate, TemplateKeeper
from toolmesh.protocol.calls import REFUSED, Call
from toolmesh.protocol.loop_report import LoopReport
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec

log = logging.getLogger("toolmesh.pool")

#: A pod that dies on its own this soon after it became ready, without serving a call,
#: failed to start (a module that crashes its pods at once, say).
STARTUP_GRACE = 1.0
#: How many pods a call to an idempotent function may try, within its deadline.
MAX_ATTEMPTS = 3
#: The first back-off after a failed start, doubled each time, capped.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
#: How often idle pods are looked for, at most (idle_timeout / 4 when that is shorter).
REAP_INTERVAL = 1.0


class ReplicaSet:
    """Runs one runtime's pods (forked by its template) and routes its calls to them."""

    def __init__(
        self,
        config: RuntimeConfig,
        template: TemplateProcess,
        metrics: PoolMetrics,
        clock: Callable[[], float] = time.monotonic,
        restart: StartTemplate | None = None,
    ) -> None:
        """`restart` starts a new template when the one running ends unasked (none: no restart)."""
        self.config = config
        self.name = config.name
        self.templates = TemplateKeeper(template, metrics, restart, clock)
        self._metrics = metrics
        self._clock = clock
        self.replicas: list[Replica] = []
        self._by_pid: dict[int, Replica] = {}
        self._starting = 0
        self._inflight = 0
        self._held = HeldCalls(self.name, config.max_queue, metrics, clock)
        self._changed = asyncio.Event()
        self._failures = 0
        self._last_failure = -math.inf
        self._backoff_until = 0.0
        self._retry_timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False
        self.templates.on_exit = self._exited
        self.templates.on_lost = self._template_lost
        self.templates.on_started = self._template_started
        metrics.watch(self.name, self)

    # -- what the pool, the metrics and readiness read ---------------------------------------

    @property
    def template(self) -> TemplateProcess:
        """The template process forking pods now (a new one after a restart)."""
        return self.templates.current

    @property
    def specs(self) -> list[FunctionSpec]:
        return self.templates.specs

    @property
    def namespaces(self) -> list[NamespaceSpec]:
        return self.templates.namespaces

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def pending(self) -> int:
        return self._held.waiting

    def replica_counts(self) -> Mapping[str, int]:
        counts = {STARTING: self._starting, READY: 0, DRAINING: 0}
        for replica in self.replicas:
            counts[replica.state] += 1
        return counts

    @property
    def ready(self) -> bool:
        """Whether calls can be served now or as soon as a pod starts."""
        if not self.template.alive:
            return False
        return self._ready_count() > 0 or self._clock() >= self._backoff_until

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start `min_replicas` pods and wait for them, then watch for idle pods."""
        self._reconcile()
        deadline = self._clock() + self.config.startup_timeout
        while self._ready_count() < self.config.min_replicas:
            self._raise_if_failing(deadline)
            await self._wait_for_change(deadline)
        self._reaper = asyncio.create_task(self._reap_idle())
        self._spawn_task(liveness.watch(self._running, self._unresponsive, self._reported))

    async def close(self) -> None:
        """Stop every pod (they drain) and the template."""
        self._closed = True
        if self._retry_timer is not None:
            self._retry_timer.cancel()
        tasks = [*self._tasks, *([self._reaper] if self._reaper else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.templates.close()
        for replica in self.replicas:
            await replica.close()
        self.replicas.clear()

    # -- calls ------------------------------------------------------------------------------

    async def invoke(self, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        deadline = self._clock() + timeout

        async def attempt() -> Result:
            replica = await self._acquire(deadline)
            try:
                remaining = max(deadline - self._clock(), 0.001)
                result = await replica.transport.invoke(call, remaining)
                self._served(replica)
                return result
            except PodUnreachable as exc:
                self._suspect(replica)
                lost = liveness.lost_call(replica.loop, call.request_id, exc, replica.pid)
                died = replica.died_mid_call(self.name, lost)
                raise (pods.TryElsewhere(died) if pods.retry_is_safe(lost, idempotent) else died) from None
            except Unavailable as exc:
                # The pod's own answer: draining (refused, so safe to send elsewhere), or
                # the function's error (a runtime it calls is down): not the pod's fault.
                if exc.details.get(REFUSED) is not True:
                    raise
                self._suspect(replica)
                raise pods.TryElsewhere(exc) from None
            except FunctionTimeout as exc:
                if replica.loop.request_id == call.request_id:
                    replica.kill("blocked", self.name)  # its deadline passed with the loop still held
                raise liveness.timed_out(replica.loop, call.request_id, exc, replica.pid) from None
            except ToolmeshError:
                self._served(replica)
                raise
            finally:
                self._release(replica)

        return await pods.with_retries(attempt, MAX_ATTEMPTS, self.name)

    async def stream(self, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        deadline = self._clock() + timeout
        replica = await self._acquire(deadline)
        try:
            async for event in replica.client.stream(call, max(deadline - self._clock(), 0.001)):
                yield event
            self._served(replica)
        except PodUnreachable as exc:
            self._suspect(replica)
            raise replica.died_mid_call(self.name, exc) from None
        finally:
            self._release(replica)

    def _served(self, replica: Replica) -> None:
        replica.served += 1
        if replica.served == 1:
            self._failures = 0  # pods start and serve: whatever failed before is over

    def _pick(self) -> Replica | None:
        """The ready pod with the fewest calls in flight, below its limit; ties go to the oldest."""
        best: Replica | None = None
        for replica in self.replicas:
            if replica.state != READY or replica.blocked:
                continue  # a pod whose loop is blocked takes no new calls until it runs again
            if best is None or replica.inflight < best.inflight:
                best = replica
        if best is None or best.inflight >= self.config.max_inflight:
            return None
        return best

    async def _acquire(self, deadline: float) -> Replica:
        replica = self._pick() or await self._hold(deadline)
        replica.taken += 1
        replica.inflight += 1
        self._inflight += 1
        if (
            self._inflight + self._held.waiting
            > (self._ready_count() + self._starting) * self.config.target_concurrency
        ):
            self._reconcile()
        return replica

    def _release(self, replica: Replica) -> None:
        replica.inflight -= 1
        self._inflight -= 1
        replica.last_used = self._clock()
        if replica.state == GONE and replica.inflight == 0:
            self._spawn_task(replica.close())
        elif self._held.waiting:
            self._notify()  # a held call may fit now

    async def _hold(self, deadline: float) -> Replica:
        """Wait for a pod to take the call: the activator."""
        with self._held.hold(cold=self._ready_count() == 0) as arrived:
            self._reconcile()
            # A singleton's one pod is busy, not starting: its calls queue until their deadline.
            busy_singleton = self.config.singleton and self._ready_count() > 0
            limit = deadline if busy_singleton else min(deadline, arrived + self.config.startup_timeout)
            while (replica := self._pick()) is None:
                self._raise_if_failing(limit)
                await self._wait_for_change(limit)
            return replica

    async def _wait_for_change(self, limit: float) -> None:
        remaining = limit - self._clock()
        if remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
                return
        why = f"; {self.templates.down_reason}, a new one is starting" if not self.template.alive else ""
        raise Unavailable(
            f"no pod of runtime {self.name!r} could take the call in time "
            f"({self._ready_count()} ready, {self._starting} starting{why})",
            retry_after=1.0,
        )

    def _notify(self) -> None:
        """Wake every held call to look again."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _raise_if_failing(self, limit: float) -> None:
        """Held calls fail fast while pods crash-loop and none is running or starting, or
        while the runtime has no template and gets none before `limit`."""
        if not self.template.alive:
            wait = self.templates.retry_at - self._clock()
            if not self.templates.restarts or self.templates.retry_at > limit:
                raise Unavailable(
                    f"runtime {self.name!r} is down ({self.templates.down_reason or 'no template process'})"
                    + (f"; next attempt in {wait:.1f} s" if self.templates.restarts else ""),
                    retry_after=max(wait, 1.0),
                )
            return
        wait = self._backoff_until - self._clock()
        if wait > 0 and self._ready_count() == 0 and self._starting == 0:
            raise Unavailable(
                f"runtime {self.name!r} is failing to start pods; next attempt in {wait:.1f} s",
                retry_after=wait,
            )

    # -- scaling ----------------------------------------------------------------------------

    def _ready(self) -> list[Replica]:
        """Pods that can take calls now (one whose loop is blocked cannot: others may start)."""
        return [r for r in self.replicas if r.state == READY and not r.blocked]

    def _running(self) -> list[Replica]:
        """Pods that should answer pings: ready ones, and draining ones until they exit."""
        return [r for r in self.replicas if r.state in (READY, DRAINING)]

    def _ready_count(self) -> int:
        return len(self._ready())

    def _wanted(self) -> int:
        demand = math.ceil((self._inflight + self._held.waiting) / self.config.target_concurrency)
        return max(self.config.min_replicas, min(self.config.max_replicas, demand))

    def _reconcile(self) -> None:
        """Start pods until there are as many as demand (or min_replicas) asks for."""
        if self._closed or not self.template.alive:
            return
        wait = self._backoff_until - self._clock()
        if wait > 0:
            if self._retry_timer is None:
                self._retry_timer = asyncio.get_running_loop().call_later(wait, self._retry)
            return
        while self._ready_count() + self._starting < self._wanted():
            self._starting += 1
            self._spawn_task(self._start_one())

    def _retry(self) -> None:
        self._retry_timer = None
        self._reconcile()
        self._notify()

    async def _start_one(self) -> None:
        began = self._clock()
        template = self.template
        try:
            spawned = await template.spawn(self.config.startup_timeout)
        except ToolmeshError as exc:
            self._starting -= 1
            if template.alive and not self._closed:
                self._metrics.start_failures.labels(self.name).inc()
                self._failed(f"a pod failed to start: {exc.message}")
            else:
                self._notify()  # its template is gone; a new one asks again
            return
        self._starting -= 1
        now = self._clock()
        replica = Replica.of(self.name, spawned, now)
        if self._closed or template is not self.template:
            with contextlib.suppress(ProcessLookupError):
                os.kill(replica.pid, signal.SIGTERM)
            await replica.close()
            return
        self.replicas.append(replica)
        self._by_pid[replica.pid] = replica
        self._metrics.replica_start_seconds.labels(self.name).observe(now - began)
        self._held.pod_ready()
        log.info("pod ready", extra={"runtime": self.name, "pid": replica.pid, "address": replica.address})
        self._notify()

    def _failed(self, reason: str) -> None:
        now = self._clock()
        if now - self._last_failure > BACKOFF_MAX * 2:
            self._failures = 0  # the last failure is long past: start the back-off over
        self._failures += 1
        self._last_failure = now
        delay = min(BACKOFF_FIRST * 2 ** (self._failures - 1), BACKOFF_MAX)
        self._backoff_until = now + delay
        log.warning(
            f"runtime {self.name!r}: {reason}; next start in {delay:.1f} s",
            extra={"runtime": self.name, "failures_in_a_row": self._failures},
        )
        self._reconcile()
        self._notify()

    def _drain(self, replica: Replica) -> None:
        """Take a pod out of rotation and let it finish its calls and exit."""
        replica.state = DRAINING
        with contextlib.suppress(ProcessLookupError):
            os.kill(replica.pid, signal.SIGTERM)

    def _suspect(self, replica: Replica) -> None:
        """A pod that could not be reached is not sent more calls."""
        if replica.state == READY:
            log.warning(
                "pod unreachable; taking it out of rotation", extra={"runtime": self.name, "pid": replica.pid}
            )
            self._drain(replica)
            self._reconcile()

    def _unresponsive(self, pod: liveness.Watched) -> None:
        """A frozen pod: out of rotation now, then killed, so it is replaced like any dead pod."""
        replica = self._by_pid.get(pod.pid)
        if replica is not None:
            replica.kill("unresponsive", self.name)

    def _reported(self, pod: liveness.Watched, report: LoopReport) -> None:
        """A pod's liveness answer: a pod whose loop a call blocks takes no new calls meanwhile,
        and is replaced if that call passes its time limit with the loop still blocked."""
        replica = self._by_pid.get(pod.pid)
        if replica is None:
            return
        self.templates.heard(replica, report)  # did its functions change? (template_keeper.py)
        change = replica.note(report)
        if change == "began":
            self._metrics.loop_blocks.labels(self.name, report.function).inc()
            log.warning(liveness.stall_message(self.name, pod.pid, report), extra={"runtime": self.name})
            self._reconcile()  # another pod may be wanted meanwhile
        elif change == "ended":
            self._notify()  # it takes calls again
        if report.condemned:
            replica.kill("blocked", self.name)

    def _gone(self, replica: Replica) -> None:
        self._by_pid.pop(replica.pid, None)
        if replica in self.replicas:
            self.replicas.remove(replica)
        replica.state = GONE
        if replica.inflight == 0:
            self._spawn_task(replica.close())

    def _exited(self, pid: int, status: int) -> None:
        replica = self._by_pid.get(pid)
        if replica is None:
            return
        asked = replica.state == DRAINING and status == 0
        self._gone(replica)
        if not asked and not self._closed:
            reason = replica.killed_for or pod_exit_reason(status)
            self._metrics.restarts.labels(self.name, reason).inc()
            lived = self._clock() - replica.started_at
            what = (
                f"pod {pid} exited with status {status} ({reason}) after {lived:.1f} s "
                f"and {replica.taken} calls"
            )
            # A pod that died running a call started fine: the call (a crashing function)
            # killed it, and backing off would deny the runtime's other functions.
            if replica.taken == 0 and lived < STARTUP_GRACE and reason in ("crashed", "recycled"):
                self._failed(what)
            else:
                log.warning(f"runtime {self.name!r}: {what}; replacing it", extra={"runtime": self.name})
                self._reconcile()
        self._notify()

    def _template_lost(self, old: TemplateProcess) -> None:
        """Its pods go with it (they drain, told by the kernel): out of rotation now; their
        calls in flight may still finish."""
        for replica in list(self.replicas):
            self._metrics.restarts.labels(self.name, "template").inc()
            self._gone(replica)
        self._notify()

    def switch(self, template: TemplateProcess, spawned: Sequence[Spawned]) -> None:
        """Send new calls to `spawned`, ready pods of `template` (the runtime's modules loaded
        again), and drain the old pods; the old template stops once they have (rollout.py)."""
        old = list(self.replicas)
        for pod in spawned:
            replica = Replica.of(self.name, pod, self._clock())
            self.replicas.append(replica)
            self._by_pid[replica.pid] = replica
        for replica in old:
            if replica.state == READY:
                self._drain(replica)

        def stopped() -> None:
            # Pods whose exit its reader missed as it stopped are gone all the same.
            for replica in old:
                if replica.state != GONE:
                    self._gone(replica)

        self.templates.replace(template, stopped)
        self._reconcile()
        self._notify()

    def _template_started(self) -> None:
        self._reconcile()
        self._notify()

    async def _reap_idle(self) -> None:
        interval = min(REAP_INTERVAL, self.config.idle_timeout / 4)
        while True:
            await asyncio.sleep(interval)
            now = self._clock()
            # Never below what demand asks for, or pods would stop and restart in a loop.
            surplus = self._ready_count() - self._wanted()
            # Newest first: the oldest pods take ties, so the newest go idle first.
            for replica in reversed(self.replicas):
                if surplus <= 0:
                    break
                idle = now - replica.last_used
                if replica.state == READY and replica.inflight == 0 and idle >= self.config.idle_timeout:
                    log.info("stopping an idle pod", extra={"runtime": self.name, "pid": replica.pid})
                    self._drain(replica)
                    surplus -= 1
            self._reconcile()

    def _spawn_task(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
