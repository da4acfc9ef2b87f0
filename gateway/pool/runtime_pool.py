"""How the gateway reaches runtimes: the serverless pool behind the core's `RuntimePool` seam.

Everything the gateway does with runtimes goes through a pool, so how pods are
provisioned can change without touching the rest. `Pool` runs pods on demand
for runtimes given as `modules` (a template process per runtime forks them;
see replicas.py) and balances over the pods of runtimes given as an `address`
(see remote.py; on Kubernetes, a headless Service that KEDA scales). Runtimes given as an
`openapi` document, an `mcp_url` or `grpc_reflection` need no pods: the gateway calls their service
itself (gateway/sources/).

Runtimes whose functions come from outside the gateway (those, and a stdio MCP server's, listed by
starting it) load in the background (startup/): `start` waits for them `start_grace` seconds at
most, and one that loads later joins as a listing change does (`on_listing_changed`); one that
fails is tried again with backoff. Until then it is `loading`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from toolmesh.config import RuntimeConfig
from toolmesh.config.config_defaults import DEFAULT_GATEWAY_START_GRACE
from toolmesh.errors import FunctionNotFound, Unavailable
from toolmesh.gateway.core.backend import Loading, PodRef
from toolmesh.gateway.pool.launcher import LaunchedTemplate, Standbys, TemplateProcess
from toolmesh.gateway.pool.listing import disagreement
from toolmesh.gateway.pool.pods import DRAINING, READY
from toolmesh.gateway.pool.pool_metrics import PoolMetrics
from toolmesh.gateway.pool.remote_runtime import RemoteRuntime, Waker
from toolmesh.gateway.pool.replicas import ReplicaSet
from toolmesh.gateway.pool.rollout import roll
from toolmesh.gateway.pool.socket_dirs import remove_stale_socket_dirs
from toolmesh.gateway.pool.startup.background_load import Attempt, BackgroundLoad
from toolmesh.gateway.pool.startup.backoff import Backoff
from toolmesh.gateway.pool.template_keeper import StartTemplate
from toolmesh.gateway.reload.sources import forget_bytecode, module_roots, module_sources
from toolmesh.gateway.sources.base.service_runtime import ServiceRuntime
from toolmesh.gateway.sources.factory import service_runtime
from toolmesh.gateway.sources.stdio_mcp import bridge_environment
from toolmesh.grpc_verbosity import quiet_grpc
from toolmesh.protocol.calls import Call
from toolmesh.protocol.pod_env import PodEnvironment, runtime_token
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec
from toolmesh.tracing import RUNTIME_SERVICE, SERVICE_NAME_ENV

log = logging.getLogger("toolmesh.pool")


@dataclass(frozen=True, slots=True)
class MeshAccess:
    """Where pods send ctx.invoke calls for functions they do not host themselves (and ctx.state's
    operations), and the mesh's internal token, from which each runtime's pods get their own."""

    address: str
    token: str

    def token_for(self, runtime: str) -> str:
        """What `runtime`'s pods present: the token that proves their runtime (core/auth.py)."""
        return runtime_token(self.token, runtime) if self.token else ""


class Pool:
    """Serverless pods for `modules` runtimes; plain connections for `address` runtimes.

    `directory` (the config file's, see `MeshConfig.directory`) is where the runtimes' modules
    are found, whatever the gateway's current directory, and relative `catalog` paths resolve.
    """

    def __init__(
        self,
        runtimes: Sequence[RuntimeConfig],
        environ: Mapping[str, str],
        mesh: MeshAccess | None = None,
        metrics: PoolMetrics | None = None,
        waker: Waker | None = None,
        directory: Path | None = None,
        tokens: Mapping[str, str] | None = None,
        headers: Mapping[str, Mapping[str, str]] | None = None,
        start_grace: float = DEFAULT_GATEWAY_START_GRACE,
        backoff: Backoff | None = None,
    ) -> None:
        """`tokens` holds the token of each runtime given by `address` whose pods require one;
        `headers` what each service runtime (`in_gateway`) sends its service (its `headers`, values read).
        `start` waits `start_grace` seconds at most for the runtimes that load in the background;
        `backoff` spaces the attempts of one that fails."""
        self._configs = {r.name: r for r in runtimes}
        #: What every pod inherits (the gateway's environment, read at start-up), before its runtime's `env`.
        self._environ = dict(environ)
        self._directory = directory
        self._mesh = mesh
        self._metrics = metrics or PoolMetrics(CollectorRegistry(), list(self._configs))
        #: Wakes remote runtimes scaled to zero (the Kubernetes scaler), if any.
        self._waker = waker
        self.sets: dict[str, ReplicaSet] = {}
        self._remotes: dict[str, RemoteRuntime] = {}
        self._services: dict[str, ServiceRuntime] = {}
        #: The runtimes loading in the background (`mcp_command` and `in_gateway`), loaded or not.
        self._loads: dict[str, BackgroundLoad] = {}
        self._start_grace = start_grace
        self._backoff = backoff
        #: Whether `start` has returned: a runtime loaded after is news for the listeners.
        self._started = False
        #: A runtime loaded before anyone listened: the first listener hears of it.
        self._unheard = False
        self._notices: set[asyncio.Task[None]] = set()
        self._tokens = dict(tokens or {})
        self._headers = dict(headers or {})
        #: One reload of a runtime at a time.
        self._reloading: dict[str, asyncio.Lock] = {}
        #: Templates started ahead of reloads (launcher.py's Standbys), for the runtimes in `_reloadable`.
        self._standbys = Standbys()
        self._reloadable: set[str] = set()
        #: Who hears that a runtime's functions changed on their own (`on_listing_changed`).
        self._listing_listeners: list[Callable[[], Awaitable[None]]] = []

    def runtimes(self) -> Sequence[str]:
        return list(self._configs)

    async def start(self) -> None:
        """Start every runtime: the templates of those given by `modules` and their `min_replicas`
        pods, and (in the background, waited for `start_grace` s at most) those that load from
        outside the gateway. A Python runtime that fails stops the start; any other is tried again."""
        try:
            if any(c.runs_pods for c in self._configs.values()):
                remove_stale_socket_dirs()
            deadline = asyncio.get_running_loop().time() + self._start_grace
            for config in self._configs.values():
                if config.in_gateway:
                    service = service_runtime(config, self._headers.get(config.name, {}), self._directory)
                    service.listing_changed = self._listing_changed
                    self._services[config.name] = service
                    self._metrics.watch(config.name, service)
                if config.in_gateway or config.mcp_command:
                    joined = functools.partial(self._joined, config.name)
                    load = BackgroundLoad(config.name, self._attempt(config), joined, self._backoff)
                    self._loads[config.name] = load
            for config in self._configs.values():
                if config.address is not None:
                    remote = RemoteRuntime(
                        config, self._metrics, self._waker, self._directory, self._tokens.get(config.name, "")
                    )
                    # Its pods' functions can change on their own, as local ones' (listing/).
                    remote.on_listed = self._listing_changed
                    self._remotes[config.name] = remote
            local = [c for c in self._configs.values() if c.runs_pods and not c.mcp_command]
            templates = await asyncio.gather(
                *(TemplateProcess.start(config, self._environment(config)) for config in local),
                return_exceptions=True,
            )
            for config, template in zip(local, templates, strict=True):
                if isinstance(template, TemplateProcess):
                    self.sets[config.name] = self._replica_set(config, template)
            for failure in templates:
                if isinstance(failure, BaseException):
                    raise failure
            await asyncio.gather(
                *(s.start() for s in self.sets.values()),
                *(r.start(self._environment(r.config)) for r in self._remotes.values()),
            )
            await self._grace(deadline)
            self._started = True
        except BaseException:
            await self.close()
            raise

    def _attempt(self, config: RuntimeConfig) -> Attempt:
        """One attempt at loading `config`, a runtime that loads in the background."""
        if config.in_gateway:
            return functools.partial(self._services[config.name].start, strict=True)

        async def stdio_server() -> None:
            template = await self._new_template(config)
            replicas = self._replica_set(config, template)
            try:
                await replicas.start()
            except BaseException:
                await replicas.close()
                raise
            self.sets[config.name] = replicas

        return stdio_server

    async def _grace(self, deadline: float) -> None:
        """Wait until every background load has had its first attempt, or `deadline`."""
        untried = [load.tried for load in self._loads.values() if not load.tried.is_set()]
        remaining = deadline - asyncio.get_running_loop().time()
        if untried and remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(tried.wait() for tried in untried)), remaining)
        for name, load in self._loads.items():
            if not load.tried.is_set():
                log.info(
                    "runtime %r is still loading: the gateway serves without it until it has loaded",
                    name,
                    extra={"runtime": name},
                )

    def _joined(self, runtime: str) -> None:
        """`runtime` has loaded in the background: after `start`, its functions are news."""
        if not self._started:
            return
        log.info("runtime %r has loaded: its functions join", runtime, extra={"runtime": runtime})
        if self._listing_listeners:
            self._notify()
        else:
            self._unheard = True

    def _notify(self) -> None:
        # A task of its own: the load that joined (or the reload waiting for it) never waits for
        # the listeners, which may be waiting for that reload.
        notice = asyncio.get_running_loop().create_task(self._listing_changed())
        self._notices.add(notice)
        notice.add_done_callback(self._notices.discard)

    def _replica_set(self, config: RuntimeConfig, template: TemplateProcess) -> ReplicaSet:
        replicas = ReplicaSet(config, template, self._metrics, restart=self._template_starter(config))
        # A pod's functions can change on their own (a stdio MCP server's `list_changed`).
        replicas.templates.on_listed = self._listing_changed
        return replicas

    def on_listing_changed(self, listener: Callable[[], Awaitable[None]]) -> None:
        self._listing_listeners.append(listener)
        if self._unheard:
            self._unheard = False
            self._notify()

    async def _listing_changed(self) -> None:
        for listener in list(self._listing_listeners):
            await listener()

    def prepare_reloads(self) -> None:
        """Reloads are coming (`toolmesh up --reload`): have every local runtime keep a standby
        template, so that a reload does not wait for a new interpreter."""
        for name in self.sets:
            self._reloadable.add(name)
            self._standbys.prepare(self._configs[name], self._environment(self._configs[name]))

    async def _new_template(self, config: RuntimeConfig) -> TemplateProcess:
        """A template of `config` with its modules loaded: from its standby if it has one."""
        environment = self._environment(config)
        launched = await self._standbys.take(config, environment)
        if launched is None:
            launched = await LaunchedTemplate.launch(config, environment)
        return await launched.load()

    def _template_starter(self, config: RuntimeConfig) -> StartTemplate:
        """Starts a new template for `config` when its template dies or hangs."""

        async def restart() -> TemplateProcess:
            template = await self._new_template(config)
            if config.name in self._reloadable:
                self._standbys.prepare(config, self._environment(config))
            return template

        return restart

    def _environment(self, config: RuntimeConfig) -> Mapping[str, str]:
        env = dict(self._environ)
        env.update(config.env)
        if config.mcp_command:
            env.update(bridge_environment(config))
        # Even when the gateway's own environment lacks it (an embedded gateway, a test).
        quiet_grpc(env)
        # The gateway's own service name is not theirs; a runtime's `env` may still choose one.
        env[SERVICE_NAME_ENV] = config.env.get(SERVICE_NAME_ENV, f"{RUNTIME_SERVICE}-{config.name}")
        if self._directory is not None:
            # First on the path (after the current directory, which `python -m` puts first).
            env["PYTHONPATH"] = os.pathsep.join(
                part for part in (str(self._directory), env.get("PYTHONPATH")) if part
            )
        mesh = self._mesh or MeshAccess("", "")
        # How a pod reaches the mesh for ctx.invoke and ctx.state (see toolmesh/protocol/pod_env.py),
        # with its runtime's own token, never the mesh's: the gateway tells the runtime from it;
        # and no pod token, even one the gateway inherited: only the gateway can reach its own pods.
        pods = PodEnvironment(mesh.address or None, mesh.token_for(config.name), pod_token="")
        env.update(pods.variables())
        return env

    def readiness(self) -> Mapping[str, bool]:
        found: dict[str, ReplicaSet | RemoteRuntime | ServiceRuntime] = {
            **self.sets,
            **self._remotes,
            **self._services,
        }
        return {name: name in found and found[name].ready for name in self._configs}

    def loading(self) -> Mapping[str, Loading]:
        return {name: load.loading for name, load in self._loads.items() if not load.loaded}

    def _runtime(self, runtime: str) -> ReplicaSet | RemoteRuntime | ServiceRuntime:
        load = self._loads.get(runtime)
        if load is not None and not load.loaded:
            loading = load.loading
            raise Unavailable(loading.message, retry_after=loading.retry_after)
        found = self.sets.get(runtime) or self._remotes.get(runtime) or self._services.get(runtime)
        if found is None:
            raise FunctionNotFound(f"no runtime named {runtime!r}")
        return found

    async def reload(self, runtime: str) -> None:
        """Import `runtime`'s modules again and roll its pods onto them (rollout.py); for a runtime
        given by an address, read its catalog again. When that fails (a module that does not
        import: launcher.ModulesFailed) it raises, and the old version keeps serving. A runtime
        still loading in the background is tried at once (or waited for, if it is being tried)."""
        load = self._loads.get(runtime)
        if load is not None and not load.loaded:
            await load.try_now()
            return
        found = self._runtime(runtime)
        async with self._reloading.setdefault(runtime, asyncio.Lock()):
            if not isinstance(found, ReplicaSet | RemoteRuntime):
                await found.start(strict=True)
                return
            environment = self._environment(found.config)
            if isinstance(found, RemoteRuntime):
                await found.start(environment)
                return
            forget_bytecode(module_sources(found.config.modules, module_roots(self._directory)))
            try:
                await roll(found, await self._new_template(found.config))
            finally:
                # A runtime reloaded once is likely reloaded again; the next one is started now
                # that this one is done, so that it does not compete with it for the CPU.
                self._reloadable.add(runtime)
                self._standbys.prepare(found.config, environment)

    async def list_functions(self, runtime: str) -> tuple[list[FunctionSpec], list[NamespaceSpec]]:
        load = self._loads.get(runtime)
        if load is not None and not load.loaded:
            return [], []
        found = self._runtime(runtime)
        config = self._configs[runtime]
        return [config.with_free_text(spec) for spec in found.specs], list(found.namespaces)

    def invoke(
        self, runtime: str, call: Call, timeout: float, *, idempotent: bool = False
    ) -> Coroutine[Any, Any, Result]:
        # The runtime's own coroutine, not one more around it: this is every call's path.
        answer = self._runtime(runtime).invoke(call, timeout, idempotent=idempotent)
        if self._may_disagree(runtime):
            return disagreement.invoked(answer, runtime, call.function)
        return answer

    async def stream(self, runtime: str, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        events = self._runtime(runtime).stream(call, timeout)
        if self._may_disagree(runtime):
            events = disagreement.streamed(events, runtime, call.function)
        async for event in events:
            yield event

    def _may_disagree(self, runtime: str) -> bool:
        """Whether `runtime`'s pods may list different functions: one's changed on its own."""
        replicas = self.sets.get(runtime)
        if replicas is not None:
            return replicas.templates.changed
        remote = self._remotes.get(runtime)
        return remote is not None and remote.listing_changed

    def pods(self) -> Sequence[PodRef]:
        return [
            PodRef(name, str(replica.pid))
            for name, replicas in self.sets.items()
            for replica in replicas.replicas
            if replica.state in (READY, DRAINING) and replica.metrics_socket is not None
        ]

    async def pod_metrics(self, pod: PodRef) -> bytes | None:
        replicas = self.sets.get(pod.runtime)
        for replica in replicas.replicas if replicas is not None else ():
            if str(replica.pid) == pod.pod and replica.state in (READY, DRAINING):
                return await replica.fetch_metrics()
        return None

    async def close(self) -> None:
        """Stop every runtime's pods (they drain) and templates, at once; loads under way end."""
        loads, self._loads = list(self._loads.values()), {}
        await asyncio.gather(*(load.cancel() for load in loads))
        notices, self._notices = list(self._notices), set()
        for notice in notices:
            notice.cancel()
        await asyncio.gather(*notices, return_exceptions=True)
        await self._standbys.close()
        sets, self.sets = list(self.sets.values()), {}
        remotes, self._remotes = list(self._remotes.values()), {}
        services, self._services = list(self._services.values()), {}
        await asyncio.gather(
            *(s.close() for s in sets), *(r.close() for r in remotes), *(s.close() for s in services)
        )
        if self._waker is not None:
            await self._waker.close()
