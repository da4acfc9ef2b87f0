"""Keeps one runtime's template process running: a new one when it dies or hangs.

A template can die like any process (the kernel's OOM killer picks large ones)
or hang (launcher.py kills one that leaves a request for a pod unanswered). Its
pods die with it (lifeline.py: they drain, then exit), so the runtime must not
wait for the gateway to restart: the keeper starts a new template at once, and
backs off exponentially only when templates keep dying young or fail to load.
Calls are held meanwhile, as for a cold start (replicas.py).

The runtime's functions are what its template listed, until a pod says (in its liveness
answer's `listing` revision) that its own changed: a stdio MCP server's `list_changed`
(runtimes/mcp/mcp_bridge.py). The keeper then reads that pod's functions and serves them as the
runtime's, and `on_listed()` has the catalog follow (reading again, a few times with backoff, when
it fails: listing/retries.py). Pods of one runtime can disagree (each has
its own server); the last one to change is believed, until it exits: a pod that replaces it
starts a new server, which lists what the template listed.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import time
from collections.abc import Awaitable, Callable

from toolmesh.errors import Unavailable
from toolmesh.gateway.pool.launcher import ExitHandler, Spawned, TemplateProcess
from toolmesh.gateway.pool.listing.retries import read_with_retries
from toolmesh.gateway.pool.pods import DRAINING, GONE, Replica
from toolmesh.gateway.pool.pool_metrics import PoolMetrics
from toolmesh.protocol.loop_report import LoopReport
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec

log = logging.getLogger("toolmesh.pool")

#: A template that lived this long before dying starts its back-off over.
TEMPLATE_STABLE = 30.0
#: The back-off before the second restart in a row, doubled each time, capped.
TEMPLATE_BACKOFF_FIRST = 0.5
TEMPLATE_BACKOFF_MAX = 30.0

StartTemplate = Callable[[], Awaitable[TemplateProcess]]
#: Seconds to read a pod's functions after it said they changed.
LISTING_TIMEOUT = 10.0


def template_exit_reason(template: TemplateProcess, status: int) -> str:
    """The `reason` label of toolmesh_template_restarts_total."""
    if template.hung:
        return "hung"
    return "killed" if status == -signal.SIGKILL else "crashed"


class TemplateKeeper:
    """The current template of a runtime, and a new one whenever it ends unasked.

    `on_lost(old)` hears of a template that ended (its pods are gone or going);
    `on_started()` of a new one ready to fork pods. Without `start`, nothing restarts.
    """

    def __init__(
        self,
        template: TemplateProcess,
        metrics: PoolMetrics,
        start: StartTemplate | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.current = template
        self.name = template.config.name
        self._start = start
        self._metrics = metrics
        self._clock = clock
        self.on_exit: ExitHandler = lambda pid, status: None
        self.on_lost: Callable[[TemplateProcess], None] = lambda old: None
        self.on_started: Callable[[], None] = lambda: None
        #: Hears that the runtime's functions changed on their own (a pod said so, or it exited).
        self.on_listed: Callable[[], Awaitable[None]] | None = None
        #: The functions a pod of the current template changed to, and its pid (`heard`).
        self._listed: tuple[int, list[FunctionSpec], list[NamespaceSpec]] | None = None
        #: When the current template started, and how many ended young in a row.
        self._since = clock()
        self._failures = 0
        #: Why the runtime has no template now (for the errors held calls end with).
        self.down_reason = ""
        #: When the next attempt to start one is due (after a failed one).
        self.retry_at = -math.inf
        self._restarting: asyncio.Task[None] | None = None
        self._old: set[asyncio.Task[None]] = set()
        #: Reading a pod's changed functions, and telling `on_listed`.
        self._listing: set[asyncio.Future[None]] = set()
        self._closed = False
        self._adopt(template)

    @property
    def alive(self) -> bool:
        return self.current.alive

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def restarts(self) -> bool:
        """Whether a template that ends is replaced (when the keeper has a way to start one)."""
        return self._start is not None and not self._closed

    @property
    def changed(self) -> bool:
        """Whether a pod's functions changed on their own: the runtime serves that pod's."""
        return self._listed is not None

    @property
    def specs(self) -> list[FunctionSpec]:
        return self._listed[1] if self._listed is not None else self.current.specs

    @property
    def namespaces(self) -> list[NamespaceSpec]:
        return self._listed[2] if self._listed is not None else self.current.namespaces

    def heard(self, pod: Replica, report: LoopReport) -> None:
        """A pod's liveness answer (before the pod notes it): when its `listing` revision moved,
        read its functions and serve them as the runtime's."""
        if report.listing != pod.loop.listing and report.listing and pod.state != DRAINING:
            self._track(asyncio.ensure_future(self._read_listing(pod, self.current)))

    async def _read_listing(self, pod: Replica, template: TemplateProcess) -> None:
        listed = await read_with_retries(
            lambda: pod.client.list_functions(LISTING_TIMEOUT),
            self.name,
            f"the functions pod {pod.pid} said changed",
            # Not once the pod is going (its server with it), nor after a reload or restart.
            wanted=lambda: pod.state not in (DRAINING, GONE) and template is self.current and not self.closed,
        )
        if listed is None:
            return
        specs, namespaces = listed
        if template is not self.current or self._closed:
            return  # a reload or restart came meanwhile: its pods list afresh
        self._listed = (pod.pid, specs, namespaces)
        log.info(
            "a pod's functions changed", extra={"runtime": self.name, "pid": pod.pid, "functions": len(specs)}
        )
        if self.on_listed is not None:
            await self.on_listed()

    def _pod_exited(self, template: TemplateProcess, pid: int, status: int) -> None:
        if template is self.current and self._listed is not None and self._listed[0] == pid:
            # Its server is gone with it; the next pod's lists what the template listed.
            self._listed = None
            if self.on_listed is not None and not self._closed:
                self._track(asyncio.ensure_future(self.on_listed()))
        self.on_exit(pid, status)

    def _track(self, task: asyncio.Future[None]) -> None:
        self._listing.add(task)
        task.add_done_callback(self._listing.discard)

    async def spawn(self, timeout: float) -> Spawned:
        return await self.current.spawn(timeout)

    def _adopt(self, template: TemplateProcess) -> None:
        self.current = template
        self._since = self._clock()
        if self._listed is not None:  # its modules (its server) listed afresh
            self._listed = None
            if self.on_listed is not None:
                self._track(asyncio.ensure_future(self.on_listed()))
        template.on_exit = lambda pid, status: self._pod_exited(template, pid, status)
        template.on_template_exit = lambda status: self._ended(template, status)

    def _ended(self, template: TemplateProcess, status: int) -> None:
        if self._closed or template is not self.current:
            return
        reason = template_exit_reason(template, status)
        self._metrics.template_restarts.labels(self.name, reason).inc()
        lived = self._clock() - self._since
        self._failures = 1 if lived >= TEMPLATE_STABLE else self._failures + 1
        self.down_reason = f"its template process {'hung' if template.hung else f'exited ({status})'}"
        log.error(
            f"runtime {self.name!r}: its template process ({reason}, status {status}) ended "
            f"after {lived:.1f} s; starting a new one",
            extra={"runtime": self.name, "pid": template.process.pid, "reason": reason},
        )
        self._retire(template)
        self.on_lost(template)
        if self._start is not None:
            self._restarting = asyncio.ensure_future(self._restart())

    def replace(self, template: TemplateProcess, stopped: Callable[[], None]) -> None:
        """Make `template` (the modules loaded again) the current one, and stop the old one: it
        stops its pods, which drain; then `stopped()`. A restart under way is called off."""
        old = self.current
        if self._restarting is not None:
            self._restarting.cancel()
        self._failures = 0
        self.down_reason = ""
        self._adopt(template)
        self._retire(old).add_done_callback(lambda _: stopped())

    def _retire(self, template: TemplateProcess) -> asyncio.Future[None]:
        task = asyncio.ensure_future(template.close())
        self._old.add(task)
        task.add_done_callback(self._old.discard)
        return task

    def _delay(self) -> float:
        if self._failures <= 1:
            return 0.0
        return min(TEMPLATE_BACKOFF_FIRST * 2.0 ** (self._failures - 2), TEMPLATE_BACKOFF_MAX)

    async def _restart(self) -> None:
        assert self._start is not None
        try:
            while not self._closed:
                delay = self._delay()
                self.retry_at = self._clock() + delay
                await asyncio.sleep(delay)
                try:
                    template = await self._start()
                except (Unavailable, OSError, ValueError) as exc:
                    self._failures += 1
                    self.down_reason = f"its template process failed to start ({exc})"
                    log.error(
                        f"runtime {self.name!r}: a new template process failed to start: {exc}",
                        extra={"runtime": self.name},
                    )
                    continue
                if self.closed:
                    await template.close()
                    return
                self._adopt(template)
                self.down_reason = ""
                log.info("template restarted", extra={"runtime": self.name, "pid": template.process.pid})
                self.on_started()
                return
        finally:
            self._restarting = None

    async def close(self) -> None:
        self._closed = True
        for listing in self._listing:
            listing.cancel()
        tasks = [*self._old, *([self._restarting] if self._restarting else [])]
        if self._restarting is not None:
            self._restarting.cancel()
        await self.current.close()
        await asyncio.gather(*tasks, return_exceptions=True)
