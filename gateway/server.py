"""Running the gateway: uvicorn (HTTP) and the gRPC Mesh service on one event loop, plus the pods.

Start-up order: bind both ports (so a busy port fails fast, before any pod
starts), start the runtimes with the mesh's gRPC address in their environment
(for ctx.invoke, on a loopback port of their own), load the catalog, then serve.
Runtimes that load from outside the gateway (a stdio MCP server, a remote MCP server, an
OpenAPI document, gRPC reflection) are waited for `[gateway] start_grace` seconds at most: one
still loading joins the catalog when it has loaded, as a listing change does (pool/startup/).

Stopping (SIGTERM) drains before it tears down: /readyz answers 503 at once, and after
`[gateway] drain_delay` seconds (0: at once) both public ports stop accepting, so
a new call is refused (connection refused, or UNAVAILABLE on a gRPC connection already open);
calls in flight get `[gateway] drain_grace` seconds, and any still running then ends with a
retryable `unavailable` error. Only then do the pods lose their way into the mesh and stop
(they drain with their runtime's own grace).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import math
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field

import grpc
import uvicorn
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

import toolmesh.tracing as tracing
from toolmesh.config import MeshConfig, settled_value
from toolmesh.gateway.core.auth import Authenticator
from toolmesh.gateway.core.backend import RuntimePool
from toolmesh.gateway.core.catalog import Catalog
from toolmesh.gateway.core.free_text import spec_documents
from toolmesh.gateway.core.keyed_calls import KeyedCalls
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.metrics import GatewayMetrics
from toolmesh.gateway.environment import GatewayEnvironment
from toolmesh.gateway.grpc.decoding import RejectUndecodable
from toolmesh.gateway.grpc.mesh_servicer import MeshServicer
from toolmesh.gateway.grpc.rpc_log import RpcLog
from toolmesh.gateway.grpc.server_limits import public_server_options
from toolmesh.gateway.grpc.wrapping_server import WrappingServer
from toolmesh.gateway.http.app import create_app, metrics_only_app
from toolmesh.gateway.http.chat_routes import chat_routes
from toolmesh.gateway.http.guards.connection_guard import ConnectionGuard, connection_cap
from toolmesh.gateway.http.guards.guarded_protocol import guarded_protocol
from toolmesh.gateway.http.lean.hot_routes import HotRoute
from toolmesh.gateway.http.request_log import RequestLog
from toolmesh.gateway.identity.metadata_routes import metadata_routes
from toolmesh.gateway.identity.protected_resource import ProtectedResource
from toolmesh.gateway.identity.tokens import TokenValidator
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.listeners import EmbeddedServer, bind_listener, is_loopback, serve_http
from toolmesh.gateway.mcp.endpoint import McpEndpoint
from toolmesh.gateway.openai.chat import ChatProxy
from toolmesh.gateway.openai.tool_selection import RouterToolSelector, ToolSelector
from toolmesh.gateway.openai.upstream import Upstream
from toolmesh.gateway.pool.kube_scaler import KubeScaler
from toolmesh.gateway.pool.pool_metrics import PoolMetrics
from toolmesh.gateway.pool.runtime_pool import MeshAccess, Pool
from toolmesh.gateway.reload.sources import runtime_sources
from toolmesh.gateway.reload.watcher import SourceWatcher
from toolmesh.gateway.shared_state import SharedState, open_state
from toolmesh.gateway.triggers.trigger_host import TriggerHost
from toolmesh.protocol.channel import server_options
from toolmesh.router.service import RouterService
from toolmesh.v1 import mesh_pb2, mesh_pb2_grpc

log = logging.getLogger("toolmesh.gateway")
MESH_SERVICE = mesh_pb2.DESCRIPTOR.services_by_name["Mesh"].full_name
#: Seconds past the drain grace the front doors get to send the errors of the calls cut off.
DELIVERY_MARGIN = 1.0


@dataclass
class Gateway:
    """A started gateway. `http_port` and `grpc_port` are the bound ports."""

    config: MeshConfig
    mesh: Mesh
    pool: RuntimePool
    grpc_server: grpc.aio.Server
    http_server: EmbeddedServer
    http_port: int
    grpc_port: int
    _http_task: asyncio.Task[None] = field(repr=False)
    mcp: McpEndpoint | None = field(default=None, repr=False)
    chat: ChatProxy | None = field(default=None, repr=False)
    router: RouterService | None = field(default=None, repr=False)
    #: The Mesh service on loopback for the pods this gateway runs (their ctx.invoke calls).
    pods_server: grpc.aio.Server | None = field(default=None, repr=False)
    #: The metrics-only listener (`[gateway] metrics_port`), if any.
    metrics_server: EmbeddedServer | None = field(default=None, repr=False)
    _metrics_task: asyncio.Task[None] | None = field(default=None, repr=False)
    metrics_port: int | None = None
    #: The access logs (request ids, lines, server spans) of each front door.
    request_log: RequestLog | None = field(default=None, repr=False)
    rpc_log: RpcLog | None = field(default=None, repr=False)
    #: Whether this gateway turned tracing on (and so ends it).
    traced: bool = False
    #: Rate limits, sessions and list_changed: local, or shared with other replicas (`[state]`).
    state: SharedState | None = field(default=None, repr=False)
    #: Asynchronous calls (`[jobs]`), unless turned off.
    jobs: JobService | None = field(default=None, repr=False)
    #: Schedules and webhooks (`[[triggers]]`), if any.
    triggers: TriggerHost | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.config.gateway.host}:{self.http_port}"

    async def stop(self, grace: float | None = None) -> None:
        """Answer not ready for `[gateway] drain_delay` s, then refuse new calls, give those in
        flight `grace` s (default: `[gateway] drain_grace`), cut them off, stop the pods."""
        grace = self.config.gateway.drain_grace if grace is None else grace
        self.mesh.drain.begin()
        if self.jobs is not None:
            self.jobs.runner.stop_claiming()  # a job taken now would only be cut off
        await asyncio.sleep(self.config.gateway.drain_delay)  # still serving, out of rotation
        if self.mcp is not None:
            self.mcp.close_streams()  # open MCP listen streams would hold the HTTP server open
        # Each front door's own deadline comes a little after the cut-off, so that it sends
        # the cut-off calls' errors instead of cancelling them bare (uvicorn takes whole seconds).
        self.http_server.config.timeout_graceful_shutdown = math.ceil(grace + DELIVERY_MARGIN)
        self.http_server.should_exit = True
        grpc_stopped = asyncio.create_task(self.grpc_server.stop(grace + DELIVERY_MARGIN))
        if self.triggers is not None:
            await self.triggers.stop()
        cut = await self.mesh.drain.wait(grace)
        if cut:
            log.warning(f"cut off {cut} call(s) still running after the drain grace of {grace:g} s")
        if self.jobs is not None:
            # Their calls are over (or were cut off, which queued the jobs again): record them.
            await self.jobs.stop(DELIVERY_MARGIN)
        with contextlib.suppress(asyncio.CancelledError):
            await self._http_task
        await grpc_stopped
        if self.pods_server is not None:
            await self.pods_server.stop(0)
        if self.metrics_server is not None and self._metrics_task is not None:
            self.metrics_server.should_exit = True
            await self._metrics_task
        if self.mcp is not None:
            await self.mcp.stop()
        if self.chat is not None:
            await self.chat.close()
        await self.pool.close()
        if self.router is not None:
            await self.router.aclose()
        if self.state is not None:
            await self.state.aclose()
        if self.mesh.auth.tokens is not None:
            await self.mesh.auth.tokens.aclose()
        for access_log in (self.request_log, self.rpc_log):
            if access_log is not None:
                access_log.flush()
        if self.mesh.audit is not None:
            self.mesh.audit.close()
        if self.traced:
            await asyncio.to_thread(tracing.shutdown)


async def _token_validator(config: MeshConfig) -> TokenValidator | None:
    """`[oauth]`'s validator with the issuer's keys fetched (or a warning if it cannot be reached)."""
    if config.oauth is None:
        return None
    audience = config.oauth.audience or settled_value(config.gateway.public_url, "[gateway] public_url")
    tokens = TokenValidator(ProtectedResource(config.oauth, audience))
    await tokens.start()
    return tokens


async def start_gateway(
    config: MeshConfig,
    *,
    pool: RuntimePool | None = None,
    environ: Mapping[str, str] | None = None,
    selector: ToolSelector | None = None,
) -> Gateway:
    """Start everything `config` describes and return once it serves.

    `selector` picks the tools the chat proxy offers when the catalog is large (default: all).
    """
    config = config.settled()
    project = settled_value(config.project.id, "[project] id")
    log.info(
        "project %s: data in %s",
        project,
        config.project.data_dir,
        extra={"project": project, "data_dir": str(config.project.data_dir)},
    )
    settings = config.gateway
    if settings.audit_log is None:  # who called what matters most where callers are people
        wanted = config.oauth is not None or settings.audit_file is not None
        settings = settings.model_copy(update={"audit_log": wanted})
    environment = GatewayEnvironment.read(config, os.environ if environ is None else environ)
    state = await open_state(config.state, environment.state_url)
    try:
        function_state = await state.function_state(config.function_state)
        outcomes = await state.keyed_outcomes(settled_value(config.project.data_dir, "[project] data_dir"))
    except BaseException:
        await state.aclose()
        raise
    tokens = await _token_validator(config)
    auth = Authenticator(
        environment.keys, internal_token=environment.mesh_token, limits=state.limits, tokens=tokens
    )
    traced = environment.tracing is not None and not tracing.enabled()
    if environment.tracing is not None:
        tracing.start(environment.tracing)
    rpc_log = RpcLog(auth, log=settings.access_log)
    waker = None
    if config.kube_scaler.enabled:
        waker = KubeScaler.from_config(config.kube_scaler, environment.kubernetes)
    http_socket = bind_listener(settings.host, settings.http_port)
    guard = ConnectionGuard(
        connection_cap(settings.max_connections), settings.header_timeout, settings.body_timeout
    )
    # No interceptors: they would run on every call; the handlers are wrapped once instead.
    wraps = (rpc_log.wrap, RejectUndecodable.wrap)
    grpc_server = grpc.aio.server(options=public_server_options(guard.cap, settings.header_timeout))
    public = WrappingServer(grpc_server, wraps)
    try:
        grpc_port = grpc_server.add_insecure_port(f"{settings.host}:{settings.grpc_port}")
    except RuntimeError:
        http_socket.close()
        raise OSError(f"cannot listen on {settings.host}:{settings.grpc_port} for gRPC") from None

    token = auth.internal_token or ""
    metrics = GatewayMetrics()
    pods_server: grpc.aio.Server | None = None
    if pool is None:
        # The pods' own way in for ctx.invoke: loopback only, and open until the public ports
        # have drained, so that a call in flight at SIGTERM can still call other functions.
        pods_server = grpc.aio.server(options=server_options())
        pods_port = pods_server.add_insecure_port("127.0.0.1:0")
        pool_metrics = PoolMetrics(metrics.registry, [r.name for r in config.runtimes])
        access = MeshAccess(f"127.0.0.1:{pods_port}", token)
        pool = Pool(
            environment.runtimes,
            environment.pods,
            access,
            pool_metrics,
            waker,
            config.directory,
            tokens=environment.runtime_tokens,
            headers=environment.runtime_headers,
            start_grace=settings.start_grace,
        )
    try:
        await pool.start()
        catalog = await Catalog.load(pool)
    except BaseException:
        http_socket.close()
        await pool.close()
        await state.aclose()
        raise
    # Loads a cached model here (fast); a missing one is built in the background.
    router = RouterService(
        config.router,
        llm_api_key=environment.llm_api_key,
        sessions=state.sessions,
        examples=state.examples,
        routings=state.routings,
    )
    await asyncio.to_thread(router.start, spec_documents(catalog.specs()))
    state.feed.listen_learned(router.relearn)
    keyed = KeyedCalls(outcomes, settings.idempotency_ttl, settings.idempotency_lease)
    mesh = Mesh(catalog, pool, auth, settings, metrics, router, state.confirmations, keyed)
    jobs: JobService | None = None
    triggers: TriggerHost | None = None
    if config.jobs.enabled:
        store = None if state.jobs is None else state.jobs(config.jobs, project)
        jobs = JobService(mesh, config.jobs, environment.callback_secret, project, store)
        try:
            await jobs.start()
        except BaseException:
            http_socket.close()
            await pool.close()
            await router.aclose()
            await state.aclose()
            raise
        if config.triggers:
            secrets = environment.trigger_secrets
            try:
                triggers = await TriggerHost.start(
                    jobs, config.triggers, project, state.redis, secrets, environment.state_url
                )
            except BaseException:
                await jobs.stop(0)
                http_socket.close()
                await pool.close()
                await router.aclose()
                await state.aclose()
                raise

    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    # One servicer for both doors (each wrapped once, wrapping_server.py): ctx.state is
    # served to a runtime's token wherever it arrives, and to no other caller.
    servicer = MeshServicer(mesh, jobs, function_state)
    mesh_pb2_grpc.add_MeshServicer_to_server(servicer, public.registrar)
    if pods_server is not None:
        mesh_pb2_grpc.add_MeshServicer_to_server(servicer, WrappingServer(pods_server, wraps).registrar)
        await pods_server.start()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, public.registrar)
    # Reflection's one rpc streams requests, which neither wrapper touches (it checks for a
    # grpc.aio.Server, too).
    reflection.enable_server_reflection(
        (MESH_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME), grpc_server
    )
    for service in ("", MESH_SERVICE):
        await health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    await grpc_server.start()

    mcp = None
    if config.mcp.enabled:
        mcp = McpEndpoint(mesh, config.mcp, state.feed, environment.mcp_state_secret, jobs)
    if mcp is not None:
        await mcp.start()
    chat = None
    if config.chat.enabled:
        upstream = Upstream(config.chat, environment.chat_api_key)
        chat = ChatProxy(mesh, config.chat, upstream, selector or RouterToolSelector(router))
    routes = [*(mcp.routes() if mcp else ()), *chat_routes(mesh, chat)]
    if tokens is not None:
        routes.extend(metadata_routes(tokens.resource))
    app = create_app(
        mesh,
        ready=pool.readiness,
        extra_routes=routes,
        allowed_origins=config.mcp.allowed_origins,
        jobs=jobs,
        triggers=triggers,
        hot_routes=[HotRoute(path, "POST", mcp) for path in ("/mcp", "/mcp/{namespace}")] if mcp else (),
    )
    request_log = RequestLog(app, auth, log=settings.access_log)
    # The header and body timeouts and the connection cap live in the protocol class, on httptools.
    uv_config = uvicorn.Config(
        request_log,
        lifespan="off",
        log_config=None,
        access_log=False,
        http=guarded_protocol(guard),
        server_header=False,
    )
    http_server, http_task = await serve_http(uv_config, http_socket)
    http_port = http_socket.getsockname()[1]
    metrics_server = metrics_task = metrics_port = None
    if settings.metrics_port is not None:
        metrics_socket = bind_listener(settings.host, settings.metrics_port)
        metrics_app = metrics_only_app(mesh, settings.allowed_hosts)
        metrics_config = uvicorn.Config(
            metrics_app, lifespan="off", log_config=None, access_log=False, server_header=False
        )
        metrics_server, metrics_task = await serve_http(metrics_config, metrics_socket)
        metrics_port = metrics_socket.getsockname()[1]
    # What start-up built (modules, the model, the catalog) lives as long as the process: out of
    # the collector's sight, a full collection walks only what requests make. Walking it all held
    # the GIL for ~70 ms, which a request making many objects (a prompt full of numbers) set off
    # on a router thread while the event loop waited.
    gc.collect()
    gc.freeze()
    await state.check()
    if auth.open:
        where = f"{settings.host}:{http_port}"
        if is_loopback(settings.host):
            log.warning("no API keys configured: the gateway is open to anything that can reach %s", where)
        else:
            log.warning(
                "no API keys configured and listening on %s: anyone on the network can call it", where
            )
    log.info(
        "gateway serving",
        extra={
            "http": f"{settings.host}:{http_port}",
            "grpc": f"{settings.host}:{grpc_port}",
            "functions": len(catalog),
            "loading": sorted(pool.loading()),
            "max_connections": guard.cap,
        },
    )
    return Gateway(
        config,
        mesh,
        pool,
        grpc_server,
        http_server,
        http_port,
        grpc_port,
        http_task,
        mcp,
        chat,
        router,
        pods_server,
        metrics_server,
        metrics_task,
        metrics_port,
        request_log,
        rpc_log,
        traced,
        state,
        jobs,
        triggers,
    )


def welcome(gateway: Gateway) -> str:
    """What a person starting `toolmesh up` at a terminal wants to see first."""
    names = sorted(spec.qualified_name for spec in gateway.mesh.catalog.specs())
    shown = ", ".join(names[:12]) + (f", ... ({len(names) - 12} more)" if len(names) > 12 else "")
    host = gateway.config.gateway.host
    loading = sorted(gateway.pool.loading())
    later = f" ({', '.join(loading)} still loading: they join when loaded)" if loading else ""
    return "\n".join(
        (
            f"toolmesh is up, serving {len(names)} function{'s' if len(names) != 1 else ''}: {shown}{later}",
            f"  HTTP     {gateway.url}            (API: {gateway.url}/openapi.json)",
            f"  console  {gateway.url}/ui/",
            f"  MCP      {gateway.url}/mcp",
            f"  gRPC     {host}:{gateway.grpc_port}",
            "Ctrl-C stops it.",
        )
    )


async def serve(
    config: MeshConfig, *, watch: bool = False, banner: bool = False, file: str | None = None
) -> int:
    """Run the gateway until SIGTERM or SIGINT. SIGHUP reloads every runtime (see core/reloading.py),
    then `file`'s [[triggers]]; with `watch` (`toolmesh up --reload`), so does an edit to a runtime's
    modules, for that runtime. Once serving it says so on stdout: a JSON line for the program
    that started it, or with `banner` (a person at a terminal) where everything is."""
    gateway = await start_gateway(config)
    reloader = gateway.mesh.reloader
    watcher = SourceWatcher(lambda: runtime_sources(config), reloader.reload) if watch else None
    if watcher is not None:
        reloader.prepare()
        await watcher.start()
    ready = {
        "event": "ready",
        "pid": os.getpid(),
        "http_port": gateway.http_port,
        "grpc_port": gateway.grpc_port,
    }
    print(welcome(gateway) if banner else json.dumps(ready), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    reloads: set[asyncio.Future[object]] = set()

    def reload_all() -> None:
        log.info("SIGHUP: reloading every runtime")
        task: asyncio.Future[object] = asyncio.ensure_future(reloader.reload())
        if file is not None and gateway.triggers is not None:  # its [[triggers]] too, after
            task = asyncio.ensure_future(gateway.triggers.reload(file, os.environ, after=task))
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    loop.add_signal_handler(signal.SIGHUP, reload_all)
    await stop.wait()
    log.info("shutting down")
    if watcher is not None:
        await watcher.stop()
    # A reload under way finishes (or fails) first: cut short, it would leave a template behind.
    await asyncio.gather(*reloads, return_exceptions=True)
    await gateway.stop()
    return 0
