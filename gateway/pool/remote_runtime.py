"""A runtime someone else runs: one pod, a Kubernetes headless Service, or any gRPC target.

The gateway balances calls round robin over the target's pods that are up and
serving (gRPC client-side balancing with health checks), and follows the pods
as they come and go. When no pod is up (a runtime scaled to zero, a rollout)
calls are held, the same bounded activator as for local pods, and counted in
`toolmesh_pending_requests{runtime}`: that is what KEDA watches to scale the
runtime from zero, and an optional waker (the Kubernetes scaler) is told at
once. Held calls go out as soon as a pod is ready.

Its functions are what its modules, its catalog or its pods listed at start-up (and at each
reload), until a pod says on its answers' trailers that its own changed (a stdio MCP server's
`list_changed`): then they are what that pod lists (listing/remote_listing.py), and `on_listed()`
has the catalog follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Protocol

import grpc

from toolmesh.config import ConfigError, RuntimeConfig
from toolmesh.errors import FunctionTimeout, Unavailable
from toolmesh.gateway.pool.activator import HeldCalls
from toolmesh.gateway.pool.launcher import TEMPLATE_START_TIMEOUT
from toolmesh.gateway.pool.listing.remote_listing import Listed, RemoteListing
from toolmesh.gateway.pool.pods import TryElsewhere, retry_is_safe, with_retries
from toolmesh.gateway.pool.pool_metrics import PoolMetrics
from toolmesh.gateway.pool.runtime_client import RuntimeClient
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec, spec_from_dict

log = logging.getLogger("toolmesh.pool")
#: How many times a call may be sent to the runtime's address, within its deadline.
ATTEMPTS = 2


class Waker(Protocol):
    """Asks whatever runs a runtime to start a pod of it (e.g. scale a Deployment from zero)."""

    async def wake(self, runtime: str) -> None: ...

    async def close(self) -> None: ...


class RemoteRuntime:
    def __init__(
        self,
        config: RuntimeConfig,
        metrics: PoolMetrics,
        waker: Waker | None = None,
        directory: Path | None = None,
        token: str = "",
    ) -> None:
        """`token` is what the pods at the address require (from `token_env`), if anything."""
        assert config.address is not None
        self.config = config
        #: The catalog file; a relative path is in the config file's directory.
        self._catalog = None if config.catalog is None else Path(config.catalog).expanduser()
        if self._catalog is not None and directory is not None:
            self._catalog = directory / self._catalog
        self.name = config.name
        self.client = RuntimeClient(config.name, config.address, balanced=True, token=token)
        self._waker = waker
        self._inflight = 0
        self._held = HeldCalls(self.name, config.max_queue, metrics)
        self._wakes: set[asyncio.Task[None]] = set()
        self.specs: list[FunctionSpec] = []
        self.namespaces: list[NamespaceSpec] = []
        #: Hears that the runtime's functions changed on their own (a pod said so).
        self.on_listed: Callable[[], Awaitable[None]] | None = None
        self._listing = RemoteListing(self.name, self.client, self._changed)
        metrics.watch(self.name, self)

    @property
    def listing_changed(self) -> bool:
        """Whether it serves what a pod's functions changed to (its pods may disagree)."""
        return self._listing.changed

    async def _changed(self, listed: Listed) -> None:
        self.specs, self.namespaces = listed
        if self.on_listed is not None:
            await self.on_listed()

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def pending(self) -> int:
        return self._held.waiting

    def replica_counts(self) -> Mapping[str, int]:
        # Pods elsewhere are counted by whoever runs them; this is whether any is reachable.
        up = self.client.channel.get_state() is grpc.ChannelConnectivity.READY
        return {"ready": int(up)}

    @property
    def ready(self) -> bool:
        return True  # with no pod up, calls are held while one starts

    async def start(self, env: Mapping[str, str]) -> None:
        """Learn the functions without waking the runtime (it may be scaled to zero): from its
        modules, read in a child process with `env`, or its catalog file; else ask its pods."""
        self._listing.forget()
        if self.config.modules:
            self.specs = await read_modules(self.config, env)
            return
        if self._catalog is not None:
            self.specs = load_catalog(self._catalog)
            return
        try:
            self.specs, self.namespaces = await self.client.list_functions(self.config.startup_timeout)
        except (Unavailable, FunctionTimeout) as exc:
            raise Unavailable(
                f"runtime {self.name!r} at {self.config.address} did not answer within "
                f"{self.config.startup_timeout:g} s ({exc.message}); if it may be scaled to zero, give it "
                "a `catalog` file (toolmesh functions --module ... --format json)"
            ) from None

    async def close(self) -> None:
        await self._listing.close()
        await self.client.close()

    async def invoke(self, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        deadline = time.monotonic() + timeout

        async def attempt() -> Result:
            await self._until_up(deadline)
            self._inflight += 1
            try:
                remaining = max(deadline - time.monotonic(), 0.001)
                return await self.client.invoke(call, remaining, wait_for_ready=True)
            except Unavailable as exc:
                if not retry_is_safe(exc, idempotent):
                    raise
                raise TryElsewhere(exc) from None
            finally:
                self._inflight -= 1

        return await with_retries(attempt, ATTEMPTS, self.name)

    async def stream(self, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        deadline = time.monotonic() + timeout
        await self._until_up(deadline)
        self._inflight += 1
        try:
            remaining = max(deadline - time.monotonic(), 0.001)
            async for event in self.client.stream(call, remaining, wait_for_ready=True):
                yield event
        finally:
            self._inflight -= 1

    async def _until_up(self, deadline: float) -> None:
        """Return at once while a pod is up; otherwise hold the call until one is."""
        channel = self.client.channel
        state = channel.get_state(try_to_connect=True)
        if state is grpc.ChannelConnectivity.READY:
            return
        with self._held.hold(cold=True) as arrived:
            if self._waker is not None:
                wake = asyncio.ensure_future(self._waker.wake(self.name))
                self._wakes.add(wake)
                wake.add_done_callback(self._wakes.discard)
            limit = min(deadline, arrived + self.config.startup_timeout)
            while state is not grpc.ChannelConnectivity.READY:
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    raise Unavailable(
                        f"no pod of runtime {self.name!r} at {self.config.address} is up", retry_after=1.0
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(channel.wait_for_state_change(state), remaining)
                state = channel.get_state(try_to_connect=True)
        self._held.pod_ready()


def _specs(document: str) -> list[FunctionSpec]:
    """The specs in what `toolmesh functions --format json` prints."""
    return [spec_from_dict(item) for item in json.loads(document)["functions"]]


def load_catalog(path: str | Path) -> list[FunctionSpec]:
    try:
        return _specs(Path(path).read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"catalog file {path}: {exc}") from None


async def read_modules(config: RuntimeConfig, env: Mapping[str, str]) -> list[FunctionSpec]:
    """The functions `config.modules` offer, read by `toolmesh functions` in a child process so
    that the user's modules never run inside the gateway."""
    command = [sys.executable, "-m", "toolmesh", "functions", "--format", "json"]
    for module in config.modules:
        command += ["--module", module]
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), TEMPLATE_START_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise ConfigError(
            f"runtimes.{config.name}: reading its modules took over {TEMPLATE_START_TIMEOUT:g} s"
        ) from None
    if process.returncode != 0:
        raise ConfigError(f"runtimes.{config.name}: cannot read its modules: {err.decode().strip()[-500:]}")
    return _specs(out.decode())
