"""A runtime pod: a grpc.aio server hosting the functions of some user modules.

Start-up order matters for health: modules load first, then the server starts
with health already SERVING, so a pod never reports SERVING without its
functions. SIGTERM (or SIGINT) drains: health turns NOT_SERVING, new calls are
refused, in-flight calls get `drain_grace` seconds to finish, then the process
exits 0. A pod whose worker threads are stuck in timed-out calls (see executor.py)
drains the same way on its own and exits `RECYCLED`, so its supervisor replaces it.

A thread watches the event loop and answers the gateway's liveness pings, so a call whose
async code blocks the loop is named, and the pod is not taken for a frozen one
(isolation/loop_watchdog.py, isolation/liveness_socket.py).

Before it serves, a pod sets its process limits (pod_process.py): its OOM score, and
its address space when the runtime has `max_memory_mb`.

Where it listens: a pod the gateway starts binds gRPC, the socket protocol and metrics
on Unix sockets in the gateway's 0700 directory (`grpc_socket`, ...), and no TCP port at
all, so no other user of the machine can reach it. A pod on a TCP port (`toolmesh
runtime`, a Deployment) requires its token when it has one (isolation/pod_auth.py);
without one it warns on loopback and refuses any other host unless `--insecure`.

As a process (`run`), a pod frames what its functions print (isolation/call_output.py,
output_pipe.py) and, when it leads its own process group, ends that group on exit so the
subprocesses its functions started do not outlive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import ipaddress
import json
import logging
import os
import signal
import sys
from collections.abc import Mapping

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

import toolmesh.tracing as tracing
from toolmesh.protocol.channel import server_options
from toolmesh.protocol.defaults import RECYCLED
from toolmesh.protocol.loop_report import LoopReport
from toolmesh.runtimes.functions import registry as registries
from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.pod import invocation_log
from toolmesh.runtimes.pod.executor import Executor
from toolmesh.runtimes.pod.executor_config import ExecutorConfig
from toolmesh.runtimes.pod.isolation import call_output
from toolmesh.runtimes.pod.isolation.liveness_socket import LivenessSocket
from toolmesh.runtimes.pod.isolation.loop_watchdog import LoopWatchdog
from toolmesh.runtimes.pod.isolation.output_pipe import OutputPipe
from toolmesh.runtimes.pod.isolation.pod_auth import TokenInterceptor
from toolmesh.runtimes.pod.mesh_invoker import MeshInvoker
from toolmesh.runtimes.pod.pod_process import apply_process_limits, end_own_group
from toolmesh.runtimes.pod.servicer import RuntimeServicer
from toolmesh.runtimes.pod.settings import PodSettings
from toolmesh.runtimes.pod.socket_server import SocketServer
from toolmesh.runtimes.pod.telemetry import LoopMetrics, PodMetrics, serve_metrics
from toolmesh.v1 import runtime_pb2, runtime_pb2_grpc

#: Seconds gRPC calls accepted at the end of a drain get to be turned away by the executor
#: (the stop returns as soon as none is left, so this costs nothing when there is none). 0.5 s was
#: too short once on a loaded 2-core CI machine: a call was cancelled, not refused.
REFUSAL_GRACE = 2.0
RUNTIME_SERVICE = runtime_pb2.DESCRIPTOR.services_by_name["Runtime"].full_name

log = logging.getLogger("toolmesh.runtime")


def executor_config(settings: PodSettings) -> ExecutorConfig:
    """The executor's part of a pod's settings."""
    return ExecutorConfig(
        default_timeout=settings.timeout,
        max_inflight=settings.max_inflight,
        workers=settings.workers,
        max_result_bytes=settings.max_result_bytes,
        max_memory_mb=settings.max_memory_mb,
        debug=settings.debug,
    )


def settle_garbage_collector() -> None:
    """Tune the GC for a long-running server, once everything is loaded.

    Freezing moves the start-up objects (modules, schemas, gRPC) out of the
    collector's sight, and a larger first generation stops it running every few
    calls: together they cut a no-op call's cost by about a fifth.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


class Unprotected(Exception):
    """A pod told to listen beyond loopback with no token and without `--insecure`."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that may resolve to anything


def check_protection(settings: PodSettings) -> None:
    """Refuse to serve the network unauthenticated; warn when only loopback is open to all.

    Raises Unprotected for a non-loopback host with no token and no `insecure`."""
    if settings.grpc_socket is not None or settings.pod_token:
        return
    where = f"{settings.host}:{settings.port}"
    if not is_loopback(settings.host) and not settings.insecure:
        raise Unprotected(
            f"refusing to serve {where} without authentication: anyone who reaches it could list "
            "and call these functions. Set TOOLMESH_POD_TOKEN (and give the gateway the same "
            "token), or pass --insecure if something else guards the port"
        )
    log.warning(
        "serving without authentication: every user of this machine (or of its network, with "
        "--insecure) can list and call these functions; set TOOLMESH_POD_TOKEN",
        extra={"address": where},
    )


def _owner_only(path: str) -> None:
    # The directory already keeps other users out; the socket's own mode says so as well.
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


class Pod:
    """A started pod. `port` and `metrics_port` are the bound TCP ports (None on Unix sockets)."""

    def __init__(self, settings: PodSettings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        registries.serve(registry)
        self.metrics_registry = CollectorRegistry()
        self.executor: Executor | None = None
        self.mesh: MeshInvoker | None = None
        self.invocation_log: invocation_log.InvocationLog | None = None
        self.server: grpc.aio.Server | None = None
        self.health = health.aio.HealthServicer()  # type: ignore[attr-defined]
        self.port: int | None = None
        self.metrics_port: int | None = None
        self._metrics_server: asyncio.Server | None = None
        self._socket_server: SocketServer | None = None
        self.watchdog: LoopWatchdog | None = None
        self._liveness: LivenessSocket | None = None
        #: Set when the pod should drain and exit: on SIGTERM, or by the pod itself.
        self.stop_requested = asyncio.Event()
        #: The pod asked to be replaced (its threads are stuck), rather than being told to stop.
        self.recycling = False

    async def start(self) -> None:
        metrics = PodMetrics(self.metrics_registry, lambda: self._inflight(), len(self.registry))
        self.invocation_log = invocation_log.InvocationLog()
        if self.settings.tracing is not None:
            # Here, in the pod, never in a template: the exporter's thread must not cross a fork.
            tracing.start(self.settings.tracing)
        if self.settings.mesh_address:
            self.mesh = MeshInvoker(self.settings.mesh_address, self.settings.mesh_token)
        self.executor = Executor(
            self.registry,
            executor_config(self.settings),
            observer=invocation_log.Observers(metrics, self.invocation_log),
            mesh=self.mesh,
            on_stuck=lambda stuck: self._recycle(f"too many threads stuck in calls that timed out ({stuck})"),
        )
        self._watch_loop(self.executor)
        token = self.settings.pod_token
        interceptors = [TokenInterceptor(token)] if token else []
        server = grpc.aio.server(options=server_options(), interceptors=interceptors)
        runtime_pb2_grpc.add_RuntimeServicer_to_server(RuntimeServicer(self.executor), server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        services = (RUNTIME_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(services, server)
        for service in ("", RUNTIME_SERVICE):
            await self.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        grpc_socket = self.settings.grpc_socket
        if grpc_socket is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(grpc_socket)
            server.add_insecure_port(f"unix:{grpc_socket}")
        else:
            self.port = server.add_insecure_port(f"{self.settings.host}:{self.settings.port}")
        await server.start()
        self.server = server
        if grpc_socket is not None:
            _owner_only(grpc_socket)
        if self.settings.socket_path is not None:
            self._socket_server = SocketServer(self.executor, self.settings.socket_path)
            await self._socket_server.start()
            _owner_only(self.settings.socket_path)
        await self._serve_metrics()

    def _watch_loop(self, executor: Executor) -> None:
        self.watchdog = LoopWatchdog(
            executor.running,
            self.settings.loop_blocked_after,
            LoopMetrics(self.metrics_registry),
            unnamed_limit=self.settings.timeout,
            unsent=lambda: self._socket_server.unsent() if self._socket_server is not None else (),
            on_condemned=self._recycle,
        )
        self.watchdog.start(asyncio.get_running_loop())
        if self.settings.liveness_socket is not None:
            self._liveness = LivenessSocket(self.settings.liveness_socket, self._report)
            self._liveness.start()

    def _report(self) -> LoopReport:
        """What its liveness socket answers (from a thread): the loop's state, and which revision
        of its functions it serves, so that the gateway reads them again when they change."""
        assert self.watchdog is not None
        report = self.watchdog.report()
        revision = self.registry.revision
        return dataclasses.replace(report, listing=revision) if revision else report

    async def _serve_metrics(self) -> None:
        path = self.settings.metrics_socket
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self._metrics_server = await serve_metrics(
                self.metrics_registry, "", 0, path=path, token=self.settings.pod_token
            )
            _owner_only(path)
        elif self.settings.metrics_port is not None:
            self._metrics_server = await serve_metrics(
                self.metrics_registry,
                self.settings.host,
                self.settings.metrics_port,
                token=self.settings.pod_token,
            )
            self.metrics_port = self._metrics_server.sockets[0].getsockname()[1]

    def _recycle(self, reason: str) -> None:
        log.warning(f"{reason}; draining to be replaced")
        self.recycling = True
        self.stop_requested.set()

    def _inflight(self) -> float:
        return float(self.executor.inflight) if self.executor is not None else 0.0

    async def stop(self, grace: float | None = None) -> None:
        """Drain: report NOT_SERVING, answer new calls UNAVAILABLE (so callers retry
        elsewhere), give in-flight ones `grace` seconds, then shut down."""
        grace = self.settings.drain_grace if grace is None else grace
        await self.health.enter_graceful_shutdown()
        if self.executor is not None:
            await self.executor.drain(grace)
        if self._socket_server is not None:
            # Whatever still runs after the grace period is cancelled here (and below for gRPC).
            self._socket_server.close()
        if self.server is not None:
            # A call gRPC accepted just before this, not yet at the executor, would be cancelled
            # by stop(0) ("Cancelling all calls": the gateway cannot tell it never ran, so it may
            # not send it elsewhere). A moment's grace lets it reach the executor, which turns it
            # away as draining (retryable); whatever still runs after that is cancelled here.
            await self.server.stop(REFUSAL_GRACE)
        if self.executor is not None:
            self.executor.close()
        if self.watchdog is not None:
            self.watchdog.stop()
        if self._liveness is not None:
            self._liveness.close()
        if self.mesh is not None:
            await self.mesh.close()
        if self.invocation_log is not None:
            self.invocation_log.flush()
        if self.settings.tracing is not None:
            # Exports the spans of the calls just drained, off the loop and bounded.
            await asyncio.to_thread(tracing.shutdown)
        if self._metrics_server is not None:
            self._metrics_server.close()
        for path in (self.settings.grpc_socket, self.settings.metrics_socket):
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def announce(ready: Mapping[str, object], fd: int | None) -> None:
    """Write the ready line: how a supervisor learns the ports a pod bound."""
    line = json.dumps(ready) + "\n"
    if fd is None:
        print(line, end="", flush=True)
    else:
        # One write() below PIPE_BUF is atomic, so pods sharing a pipe never interleave.
        os.write(fd, line.encode())


async def serve(
    settings: PodSettings, registry: Registry | None = None, *, checked: bool = False
) -> tuple[int, int]:
    """Run a pod until SIGTERM/SIGINT (or until it recycles itself); returns the exit status
    and how many threads are still running calls nobody waits for. A template process passes
    the `registry` it loaded before forking, `run()` the one it loaded (`checked`: after
    `check_protection`); otherwise the modules load here."""
    if not checked:
        check_protection(settings)
    if registry is None:
        registry = Registry.from_modules(settings.modules)
    # After the modules (whose size the limit's check counts), before gRPC starts its threads.
    apply_process_limits(settings.max_memory_mb, settings.workers)
    pod = Pod(settings, registry)
    await pod.start()
    settle_garbage_collector()
    ready = {
        "event": "ready",
        "pid": os.getpid(),
        "grpc_port": pod.port,
        "metrics_port": pod.metrics_port,
        "functions": len(registry),
        "socket": settings.socket_path,
        "grpc_socket": settings.grpc_socket,
        "metrics_socket": settings.metrics_socket,
        "liveness_socket": settings.liveness_socket,
        **({"spawn": settings.spawn_id} if settings.spawn_id else {}),
    }
    announce(ready, settings.ready_fd)
    log.info("serving", extra={k: v for k, v in ready.items() if k != "event"})
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, pod.stop_requested.set)
    await pod.stop_requested.wait()
    inflight = pod.executor.inflight if pod.executor else 0
    log.info("draining", extra={"inflight": inflight, "grace_seconds": settings.drain_grace})
    await pod.stop()
    log.info("stopped")
    busy = pod.executor.busy_threads if pod.executor else 0
    return (RECYCLED if pod.recycling else 0), busy


def use_working_directory() -> None:
    """Make the project's modules importable the way `python -m` would, so
    `toolmesh runtime --module examples.weather` works from a project root."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def run(settings: PodSettings, registry: Registry | None = None) -> int:
    """Blocking entry point used by the CLI and by template processes after a fork."""
    use_working_directory()
    if settings.ready_fd is None:
        # The ready line goes to the real stdout, before stdout becomes the output pipe.
        settings = dataclasses.replace(settings, ready_fd=os.dup(1))
    output = OutputPipe.install()
    call_output.install()
    try:
        checked = registry is None
        if registry is None:
            # Before the event loop, as in a template: a module may run a loop of its own while
            # it imports (the stdio MCP bridge lists its server with asyncio.run).
            check_protection(settings)
            registry = Registry.from_modules(settings.modules)
        code, busy = asyncio.run(serve(settings, registry, checked=checked))
    finally:
        end_own_group()
        call_output.uninstall()
        output.close()
    if busy:
        # Sync functions still running past the grace period must not hold the exit
        # (the interpreter would join their threads). Idle pool threads end on their own.
        log.warning("abandoning calls stuck in worker threads", extra={"threads": busy})
        logging.shutdown()
        sys.stdout.flush()
        os._exit(code)
    return code
