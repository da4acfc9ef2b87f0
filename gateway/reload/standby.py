"""Standby templates: a template process started ahead of a reload, so the reload skips it.

Most of a template's start is a new interpreter importing toolmesh, grpc, protobuf and
pydantic (~0.4 s on an idle core, more under load); the user's modules are a small
part. A standby is a template launched with the runtime's settings that has done the
former and waits to do the latter (runtimes/pod/template.py's `load` line), so a
reload pays only for the modules. It is a fresh interpreter that never imported
them: modules that fail to import, have import-time side effects, use relative
imports or import something new behave exactly as at a first start. (Forking the
running template and re-importing only the user's modules in the child was the
other way; it leaves whatever those modules did to the modules that stay, and the
new template would not be the gateway's child, whose end the pool must see.)

A runtime gets a standby once reloads are expected (`toolmesh up --reload`, or after
its first reload), and a new one after each reload has rolled out, off the critical
path. One started with another environment than the reload's is not used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping

from toolmesh.config import RuntimeConfig
from toolmesh.gateway.pool.launcher import LaunchedTemplate

log = logging.getLogger("toolmesh.pool")


class Standbys:
    """At most one standby template per runtime."""

    def __init__(self) -> None:
        self._launching: dict[str, asyncio.Task[LaunchedTemplate]] = {}
        self._closed = False

    def __contains__(self, runtime: object) -> bool:
        return runtime in self._launching

    def prepare(self, config: RuntimeConfig, env: Mapping[str, str]) -> None:
        """Launch a standby for `config` unless it has one."""
        if self._closed or config.name in self._launching:
            return
        self._launching[config.name] = asyncio.ensure_future(LaunchedTemplate.launch(config, env))

    async def take(self, config: RuntimeConfig, env: Mapping[str, str]) -> LaunchedTemplate | None:
        """The runtime's standby, if it has a live one started with `env`; it is no longer kept."""
        task = self._launching.pop(config.name, None)
        if task is None:
            return None
        try:
            launched = await task
        except OSError as exc:
            log.warning(f"runtime {config.name!r}: its standby template failed to start: {exc}")
            return None
        if launched.alive and launched.env == dict(env):
            return launched
        await launched.discard()
        return None

    async def close(self) -> None:
        """Stop every standby (they exit at once: none has loaded anything)."""
        self._closed = True
        tasks, self._launching = list(self._launching.values()), {}
        for task in tasks:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await (await task).discard()
