"""A runtime pod: a grpc.aio server hosting the functions of some user modules.

Start-up order matters for health: modules load first, then the server starts
with health already SERVING, so a pod never reports SERVING without its
functions. SIGTERM (or SIGINT) drains: health turns NOT_SERVING, new calls are
refused, in-flight calls get `drain_grace` seconds to finish, then the process
exits 0.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.pod import logs
from toolmesh.runtimes.pod.defaults import (
    DEFAULT_DRAIN_GRACE,
    DEFAULT_HOST,
    DEFAULT_METRICS_PORT,
    DEFAULT_PORT,
)
from toolmesh.runtimes.pod.executor import Executor, ExecutorConfig
from toolmesh.runtimes.pod.mesh_invoker import MeshInvoker
from toolmesh.runtimes.pod.servicer import RuntimeServicer
from toolmesh.runtimes.pod.socket_protocol import SocketServer
from toolmesh.runtimes.pod.telemetry import PodMetrics, serve_metrics
from toolmesh.v1 import runtime_pb2, runtime_pb2_grpc

RUNTIME_SERVICE = runtime_pb2.DESCRIPTOR.services_by_name["Runtime"].full_name

log = logging.getLogger("toolmesh.runtime")


@dataclass(frozen=True)
class PodConfig:
    modules: Sequence[str]
    host: str = DEFAULT_HOST
    #: gRPC port; 0 picks a free one (reported in the ready line).
    port: int = DEFAULT_PORT
    #: Prometheus port; 0 picks a free one, None turns metrics off.
    metrics_port: int | None = DEFAULT_METRICS_PORT
    drain_grace: float = DEFAULT_DRAIN_GRACE
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    #: The gateway's gRPC address and token, so ctx.invoke reaches the whole mesh.
    mesh_address: str | None = None
    mesh_token: str = ""
    #: A Unix socket to also serve Invoke on, for the gateway that started this pod.
    socket_path: str | None = None
    #: Where the ready line goes: a file descriptor the supervisor reads (stdout by default).
    ready_fd: int | None = None
    #: Extra fields for the ready line, e.g. the spawn id a template process asked for.
    ready_tag: Mapping[str, object] = field(default_factory=dict)


def settle_garbage_collector() -> None:
    """Tune the GC for a long-running server, once everything is loaded.

    Freezing moves the start-up objects (modules, schemas, gRPC) out of the
    collector's sight, and a larger first generation stops it running every few
    calls: together they cut a no-op call's cost by about a fifth.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def server_options() -> list[tuple[str, int]]:
    # SO_REUSEPORT would let two pods bind the same port and split its traffic.
    return [("grpc.so_reuseport", 0)]


class Pod:
    """A started pod. `ports` are the bound gRPC and metrics ports."""

    def __init__(self, config: PodConfig, registry: Registry) -> None:
        self.config = config
        self.registry = registry
        self.metrics_registry = CollectorRegistry()
        self.executor: Executor | None = None
        self.mesh: MeshInvoker | None = None
        self.invocation_log: logs.InvocationLog | None = None
        self.server: grpc.aio.Server | None = None
        self.health = health.aio.HealthServicer()  # type: ignore[attr-defined]
        self.port = 0
        self.metrics_port: int | None = None
        self._metrics_server: asyncio.Server | None = None
        self._socket_server: SocketServer | None = None

    async def start(self) -> None:
        metrics = PodMetrics(self.metrics_registry, lambda: self._inflight(), len(self.registry))
        self.invocation_log = logs.InvocationLog()
        if self.config.mesh_address:
            self.mesh = MeshInvoker(self.config.mesh_address, self.config.mesh_token)
        self.executor = Executor(
            self.registry,
            self.config.executor,
            observer=logs.Observers(metrics, self.invocation_log),
            mesh=self.mesh,
        )
        server = grpc.aio.server(options=server_options())
        runtime_pb2_grpc.add_RuntimeServicer_to_server(RuntimeServicer(self.executor), server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        services = (RUNTIME_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(services, server)
        for service in ("", RUNTIME_SERVICE):
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        self.port = server.add_insecure_port(f"{self.config.host}:{self.config.port}")
        await server.start()
        self.server = server
        if self.config.socket_path is not None:
            self._socket_server = SocketServer(self.executor, self.config.socket_path)
            await self._socket_server.start()
        if self.config.metrics_port is not None:
            self._metrics_server = await serve_metrics(
                self.metrics_registry, self.config.host, self.config.metrics_port
            )
            self.metrics_port = self._metrics_server.sockets[0].getsockname()[1]

    def _inflight(self) -> float:
        return float(self.executor.inflight) if self.executor is not None else 0.0

    async def stop(self, grace: float | None = None) -> None:
        """Drain: report NOT_SERVING, answer new calls UNAVAILABLE (so callers retry
        elsewhere), give in-flight ones `grace` seconds, then shut down."""
        grace = self.config.drain_grace if grace is None else grace
        await self.health.enter_graceful_shutdown()
        if self.executor is not None:
            await self.executor.drain(grace)
        if self._socket_server is not None:
            # Whatever still runs after the grace period is cancelled here (and below for gRPC).
            self._socket_server.close()
        if self.server is not None:
            # Whatever still runs after the grace period is cancelled here.
            await self.server.stop(0)
        if self.executor is not None:
            self.executor.close()
        if self.mesh is not None:
            await self.mesh.close()
        if self.invocation_log is not None:
            self.invocation_log.flush()
        if self._metrics_server is not None:
            self._metrics_server.close()


def announce(ready: Mapping[str, object], fd: int | None) -> None:
    """Write the ready line: how a supervisor learns the ports a pod bound."""
    line = json.dumps(ready) + "\n"
    if fd is None:
        print(line, end="", flush=True)
    else:
        # One write() below PIPE_BUF is atomic, so pods sharing a pipe never interleave.
        os.write(fd, line.encode())


async def serve(config: PodConfig, registry: Registry | None = None) -> int:
    """Run a pod until SIGTERM/SIGINT; returns the exit status. A template process
    passes the `registry` it loaded before forking; otherwise the modules load here."""
    if registry is None:
        registry = Registry.from_modules(config.modules)
    pod = Pod(config, registry)
    await pod.start()
    settle_garbage_collector()
    ready = {
        "event": "ready",
        "pid": os.getpid(),
        "grpc_port": pod.port,
        "metrics_port": pod.metrics_port,
        "functions": len(registry),
        "socket": config.socket_path,
        **config.ready_tag,
    }
    announce(ready, config.ready_fd)
    log.info("serving", extra={k: v for k, v in ready.items() if k != "event"})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    inflight = pod.executor.inflight if pod.executor else 0
    log.info("draining", extra={"inflight": inflight, "grace_seconds": config.drain_grace})
    await pod.stop()
    log.info("stopped")
    return 0


def use_working_directory() -> None:
    """Make the project's modules importable the way `python -m` would, so
    `toolmesh runtime --module examples.weather` works from a project root."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def run(config: PodConfig, registry: Registry | None = None) -> int:
    """Blocking entry point used by the CLI and by template processes after a fork."""
    use_working_directory()
    code = asyncio.run(serve(config, registry))
    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if stuck:
        # Sync functions still running past the grace period must not hold the exit.
        log.warning("abandoning calls stuck in worker threads", extra={"threads": len(stuck)})
        logging.shutdown()
        sys.stdout.flush()
        os._exit(code)
    return code
