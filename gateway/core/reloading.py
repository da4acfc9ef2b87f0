"""Reloading runtimes while the gateway serves, and following the catalog they then offer.

The pool rolls each runtime onto its modules imported again, with no call failing
(gateway/pool/rollout.py). Then the catalog is read again, and a change (a
function added, removed, its schema changed) reaches everything derived from it:
`/v1/functions` at once, MCP listen streams as `list_changed` (the endpoint
subscribes to the catalog), and the router's index, which embeds only what is new
or changed (router/search/index.py). A runtime whose modules fail to import keeps its old
version serving; the error, with its traceback, is logged and reported.

Whoever asks (`toolmesh up --reload`, SIGHUP, `POST /v1/admin/reload`) gets a
`ReloadReport`. Reloads run one at a time.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolmesh.config import ConfigError
from toolmesh.errors import FunctionNotFound, ToolmeshError
from toolmesh.gateway.core.backend import RuntimePool
from toolmesh.gateway.core.catalog import Catalog
from toolmesh.gateway.core.free_text import spec_documents
from toolmesh.router.service import RouterService

log = logging.getLogger("toolmesh.gateway")


@dataclass(frozen=True, slots=True)
class RuntimeReload:
    """How reloading one runtime went: `error` (and the import's `traceback`) when it failed."""

    runtime: str
    error: str = ""
    traceback: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, Any]:
        if self.ok:
            return {"runtime": self.runtime, "status": "reloaded"}
        return {"runtime": self.runtime, "status": "failed", "error": self.error, "traceback": self.traceback}


@dataclass(frozen=True, slots=True)
class ReloadReport:
    runtimes: tuple[RuntimeReload, ...]
    #: Whether the catalog differs from before (functions added, removed or changed).
    catalog_changed: bool
    #: Why the catalog could not follow (two runtimes now offer the same name), if it could not.
    catalog_error: str = ""

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runtimes) and not self.catalog_error

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "ok": self.ok,
            "catalog_changed": self.catalog_changed,
            "runtimes": [r.to_dict() for r in self.runtimes],
        }
        if self.catalog_error:
            document["catalog_error"] = self.catalog_error
        return document


class Reloader:
    def __init__(self, catalog: Catalog, pool: RuntimePool, router: RouterService) -> None:
        self._catalog = catalog
        self._pool = pool
        self._router = router
        self._lock = asyncio.Lock()

    def prepare(self) -> None:
        """Reloads are coming (`toolmesh up --reload`): the pool readies itself to make them fast."""
        self._pool.prepare_reloads()

    async def reload(self, runtimes: Sequence[str] | None = None) -> ReloadReport:
        """Reload `runtimes` (default: all) at once, then follow the catalog. FunctionNotFound
        for a runtime that does not exist; every other failure is in the report."""
        known = list(self._pool.runtimes())
        names = known if runtimes is None else list(dict.fromkeys(runtimes))
        for name in names:
            if name not in known:
                raise FunctionNotFound(f"no runtime named {name!r}", param="runtime")
        async with self._lock:
            outcomes = await asyncio.gather(*(self._one(name) for name in names))
            try:
                changed = await self._catalog.reload(self._pool)
            except ConfigError as exc:
                log.error(f"the catalog cannot follow the reload, it keeps its old contents: {exc}")
                return ReloadReport(tuple(outcomes), False, str(exc))
            if changed:
                documents = spec_documents(self._catalog.specs())
                await self._router.in_worker(functools.partial(self._router.sync, documents))
        log.info(
            "reload done",
            extra={"runtimes": [o.runtime for o in outcomes if o.ok], "catalog_changed": changed},
        )
        return ReloadReport(tuple(outcomes), changed)

    async def follow(self) -> None:
        """A runtime's functions changed on their own (a remote MCP server's `list_changed`): the
        catalog, and what follows it, are brought up to date as after a reload."""
        async with self._lock:
            try:
                changed = await self._catalog.reload(self._pool)
            except ConfigError as exc:
                log.error(f"the catalog cannot follow a runtime's change, it keeps its old contents: {exc}")
                return
            if changed:
                documents = spec_documents(self._catalog.specs())
                await self._router.in_worker(functools.partial(self._router.sync, documents))
        log.info("catalog followed a runtime's own change", extra={"catalog_changed": changed})

    async def _one(self, runtime: str) -> RuntimeReload:
        try:
            await self._pool.reload(runtime)
        except (ToolmeshError, ConfigError, OSError) as exc:
            message = exc.message if isinstance(exc, ToolmeshError) else str(exc)
            # A failed import carries the template's traceback; anything else, our own.
            trace = getattr(exc, "traceback", "") or "".join(traceback.format_exception(exc))
            log.error(
                f"runtime {runtime!r} was not reloaded, its old version keeps serving: {message}\n{trace}",
                extra={"runtime": runtime},
            )
            return RuntimeReload(runtime, message, trace)
        return RuntimeReload(runtime)
