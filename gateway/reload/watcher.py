"""`toolmesh up --reload`: watch the runtimes' source files and reload those that change.

Polling modification times is dependency-free and cheap for the handful of files a
runtime has (a few `stat` calls every `POLL_INTERVAL`, off the event loop). A file
that is added, removed or rewritten counts as a change of the runtimes it belongs
to (sources.py). A reload that fails (a half-saved file that does not import) keeps
the old version serving; the next save is another change, and another reload.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from toolmesh.gateway.reload.sources import Stamps, stamps

log = logging.getLogger("toolmesh.gateway")

#: Seconds between two looks at the files: the most an edit waits before its reload starts.
POLL_INTERVAL = 0.1

Sources = Callable[[], Mapping[str, Sequence[Path]]]
Reload = Callable[[list[str]], Awaitable[object]]


class SourceWatcher:
    """Calls `reload(runtimes)` with the runtimes whose files changed since the last look.

    `sources()` is asked each time, so files added to a package are seen."""

    def __init__(self, sources: Sources, reload: Reload, interval: float = POLL_INTERVAL) -> None:
        self._sources = sources
        self._reload = reload
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    def _look(self) -> dict[str, Stamps]:
        return {runtime: stamps(files) for runtime, files in self._sources().items()}

    async def _run(self, last: dict[str, Stamps]) -> None:
        while True:
            await asyncio.sleep(self._interval)
            now = await asyncio.to_thread(self._look)
            changed = [runtime for runtime, seen in now.items() if seen != last.get(runtime)]
            last = now
            if changed:
                log.info("modules changed; reloading", extra={"runtimes": changed})
                try:
                    await self._reload(changed)
                except Exception:  # the watcher outlives whatever one reload does
                    log.exception("reload failed", extra={"runtimes": changed})

    async def start(self) -> None:
        """Take the first look (an edit after this returns is a change), then keep looking."""
        last = await asyncio.to_thread(self._look)
        log.info("watching the runtimes' modules for changes", extra={"files": sum(map(len, last.values()))})
        self._task = asyncio.create_task(self._run(last))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
