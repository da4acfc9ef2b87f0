"""Keeps one runtime's template process running: a new one when it dies or hangs.

A template can die like any process (the kernel's OOM killer picks large ones)
or hang (launcher.py kills one that leaves a request for a pod unanswered). Its
pods die with it (lifeline.py: they drain, then exit), so the runtime must not
wait for the gateway to restart: the keeper starts a new template at once, and
backs off exponentially only when templates keep dying young or fail to load.
Calls are held meanwhile, as for a cold start (replicas.py).
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
from toolmesh.gateway.pool.pool_metrics import PoolMetrics
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec

log = logging.getLogger("toolmesh.pool")

#: A template that lived this long before dying starts its back-off over.
TEMPLATE_STABLE = 30.0
#: The back-off before the second restart in a row, doubled each time, capped.
TEMPLATE_BACKOFF_FIRST = 0.5
TEMPLATE_BACKOFF_MAX = 30.0

StartTemplate = Callable[[], Awaitable[TemplateProcess]]


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
        #: When the current template started, and how many ended young in a row.
        self._since = clock()
        self._failures = 0
        #: Why the runtime has no template now (for the errors held calls end with).
        self.down_reason = ""
        #: When the next attempt to start one is due (after a failed one).
        self.retry_at = -math.inf
        self._restarting: asyncio.Task[None] | None = None
        self._old: set[asyncio.Task[None]] = set()
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
    def specs(self) -> list[FunctionSpec]:
        return self.current.specs

    @property
    def namespaces(self) -> list[NamespaceSpec]:
        return self.current.namespaces

    async def spawn(self, timeout: float) -> Spawned:
        return await self.current.spawn(timeout)

    def _adopt(self, template: TemplateProcess) -> None:
        self.current = template
        self._since = self._clock()
        template.on_exit = lambda pid, status: self.on_exit(pid, status)
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
        tasks = [*self._old, *([self._restarting] if self._restarting else [])]
        if self._restarting is not None:
            self._restarting.cancel()
        await self.current.close()
        await asyncio.gather(*tasks, return_exceptions=True)
