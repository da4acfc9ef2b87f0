"""A runtime pod's settings: one typed model and one command line.

`toolmesh runtime` parses its flags into a `PodSettings` (`add_arguments`, then
`PodSettings.from_arguments`); whoever starts a pod builds that command line
from one with `argv()`: the gateway's launcher (from a ``[[runtimes]]`` entry)
and a template process in exec mode. So the flags are written once, here, and
what a pod is told always parses back into the settings it was given.

The defaults are in defaults.py. The mesh's address and token, and the pod's own
token, come from the environment (pod_env.py), never from a flag: a command line is
readable by every user of the machine.

This module imports neither grpc nor the executor: every `toolmesh` command
builds its parser from it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from toolmesh.protocol.defaults import (
    DEFAULT_DRAIN_GRACE,
    DEFAULT_HOST,
    DEFAULT_LOG_LEVEL,
    DEFAULT_LOOP_BLOCKED_AFTER,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_METRICS_PORT,
    DEFAULT_PORT,
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
    LOG_LEVELS,
    TEMPLATE_MODES,
    LogLevel,
    TemplateMode,
)
from toolmesh.protocol.pod_env import PodEnvironment

#: What follows the interpreter in a pod's command line: `python -m toolmesh runtime ...`.
COMMAND = ("-m", "toolmesh", "runtime")
#: `--metrics-port` value that turns metrics off (any negative port does).
NO_METRICS = -1


@dataclass(frozen=True, slots=True)
class PodSettings:
    """Everything a runtime pod, or a template process that forks pods, starts with."""

    #: The modules whose functions the pod serves.
    modules: tuple[str, ...]
    host: str = DEFAULT_HOST
    #: gRPC port; 0 picks a free one (reported in the ready line).
    port: int = DEFAULT_PORT
    #: Prometheus port; 0 picks a free one, None turns metrics off.
    metrics_port: int | None = DEFAULT_METRICS_PORT
    #: Seconds in-flight calls get to finish after SIGTERM.
    drain_grace: float = DEFAULT_DRAIN_GRACE
    #: Seconds a call may run when its function sets no timeout.
    timeout: float = DEFAULT_TIMEOUT
    #: Calls running at once before new ones are turned away (RESOURCE_EXHAUSTED).
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    #: Threads for sync functions.
    workers: int = DEFAULT_WORKERS
    #: The pod's address-space limit in MiB (RLIMIT_AS, applied in the pod, never the template),
    #: or None for none. A call that passes it ends with a resource_exhausted error.
    max_memory_mb: int | None = DEFAULT_MAX_MEMORY_MB
    #: Largest result a call may return, in bytes; larger ones become resource_exhausted errors.
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    #: Seconds a call's async code may block the event loop before it is reported.
    loop_blocked_after: float = DEFAULT_LOOP_BLOCKED_AFTER
    #: Put tracebacks in error results. Never on in production: it leaks code paths.
    debug: bool = False
    log_level: LogLevel = DEFAULT_LOG_LEVEL
    #: Serve on a host other than loopback without a pod token (see pod_env.POD_TOKEN_ENV).
    insecure: bool = False

    # How the gateway provisions pods (template.py); hidden from `toolmesh runtime --help`.
    #: Run as a template process that starts pods this way, instead of as a pod.
    template: TemplateMode | None = None
    #: In a template: the directory (mode 0700) its pods bind their Unix sockets in. Its
    #: pods then serve gRPC, the socket protocol and metrics there only, never on TCP.
    socket_dir: str | None = None
    #: A Unix socket to also serve Invoke on, for the gateway that started this pod.
    socket_path: str | None = None
    #: A Unix socket to serve gRPC on instead of host:port.
    grpc_socket: str | None = None
    #: A Unix socket to serve /metrics on instead of metrics_port.
    metrics_socket: str | None = None
    #: A Unix socket where a thread answers the gateway's liveness pings (liveness_socket.py).
    liveness_socket: str | None = None
    #: Where the ready line goes: a file descriptor the supervisor reads (stdout by default).
    ready_fd: int | None = None
    #: The template's spawn request this pod answers, echoed in its ready line.
    spawn_id: str | None = None

    # From the environment, never the command line (see pod_env.py).
    #: The gateway's gRPC address, so ctx.invoke reaches the whole mesh.
    mesh_address: str | None = None
    #: The mesh's internal token for those calls; kept out of the repr.
    mesh_token: str = field(default="", repr=False)
    #: The bearer token every Runtime call and metrics scrape must present; empty for none.
    pod_token: str = field(default="", repr=False)
    #: The service name to trace as (OTEL_*); None: tracing is off.
    tracing: str | None = None

    @classmethod
    def from_arguments(cls, args: argparse.Namespace, environment: PodEnvironment) -> PodSettings:
        """The settings from `toolmesh runtime`'s parsed flags (see `add_arguments`) and the
        environment the process was started with (read once, by `read_environment`)."""
        return cls(
            modules=tuple(args.module),
            host=args.host,
            port=args.port,
            metrics_port=None if args.metrics_port < 0 else args.metrics_port,
            drain_grace=args.drain_grace,
            timeout=args.timeout,
            max_inflight=args.max_inflight,
            workers=args.workers,
            max_memory_mb=args.max_memory_mb,
            max_result_bytes=args.max_result_bytes,
            loop_blocked_after=args.loop_blocked_after,
            debug=args.debug,
            log_level=args.log_level,
            insecure=args.insecure,
            template=args.template,
            socket_dir=args.socket_dir,
            socket_path=args.socket_path,
            grpc_socket=args.grpc_socket,
            metrics_socket=args.metrics_socket,
            liveness_socket=args.liveness_socket,
            ready_fd=args.ready_fd,
            spawn_id=args.spawn_id,
            mesh_address=environment.mesh_address,
            mesh_token=environment.mesh_token,
            pod_token=environment.pod_token,
            tracing=environment.tracing,
        )

    @property
    def environment(self) -> PodEnvironment:
        """What a pod started with these settings must find in its environment."""
        return PodEnvironment(self.mesh_address, self.mesh_token, self.pod_token, self.tracing)

    def argv(self) -> list[str]:
        """The arguments after the interpreter that start a process with these settings:
        ``[sys.executable, *settings.argv()]``. The mesh's address and token are not among
        them: the process gets them from its environment (`environment`)."""
        argv = [*COMMAND, "--host", self.host, "--port", str(self.port)]
        metrics_port = NO_METRICS if self.metrics_port is None else self.metrics_port
        argv += ["--metrics-port", str(metrics_port), "--timeout", str(self.timeout)]
        argv += ["--max-inflight", str(self.max_inflight), "--workers", str(self.workers)]
        argv += ["--drain-grace", str(self.drain_grace), "--log-level", self.log_level]
        argv += ["--max-result-bytes", str(self.max_result_bytes)]
        argv += ["--loop-blocked-after", str(self.loop_blocked_after)]
        argv += ["--max-memory-mb", str(self.max_memory_mb)] if self.max_memory_mb is not None else []
        argv += ["--debug"] if self.debug else []
        argv += ["--insecure"] if self.insecure else []
        internal = (
            ("--template", self.template),
            ("--socket-dir", self.socket_dir),
            ("--socket-path", self.socket_path),
            ("--grpc-socket", self.grpc_socket),
            ("--metrics-socket", self.metrics_socket),
            ("--liveness-socket", self.liveness_socket),
            ("--ready-fd", self.ready_fd),
            ("--spawn-id", self.spawn_id),
        )
        for flag, value in internal:
            argv += [flag, str(value)] if value is not None else []
        for module in self.modules:
            argv += ["--module", module]
        return argv


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`toolmesh runtime`'s flags, read back by `PodSettings.from_arguments`."""
    parser.add_argument("--module", "-m", action="append", required=True, help="module to serve (repeatable)")
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="gRPC port, 0 for any (default %(default)s)"
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=DEFAULT_METRICS_PORT,
        help=f"Prometheus /metrics port, 0 for any, {NO_METRICS} for none (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds a call may run when its function sets no timeout (default %(default)s)",
    )
    parser.add_argument(
        "--max-inflight",
        type=int,
        default=DEFAULT_MAX_INFLIGHT,
        help="calls at once before RESOURCE_EXHAUSTED (default %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="threads for sync functions (default %(default)s)",
    )
    parser.add_argument(
        "--drain-grace",
        type=float,
        default=DEFAULT_DRAIN_GRACE,
        help="seconds in-flight calls get after SIGTERM (default %(default)s)",
    )
    parser.add_argument(
        "--max-memory-mb",
        type=int,
        default=DEFAULT_MAX_MEMORY_MB,
        help="address-space limit of the pod in MiB; calls past it fail with resource_exhausted "
        "(default: none)",
    )
    parser.add_argument(
        "--max-result-bytes",
        type=int,
        default=DEFAULT_MAX_RESULT_BYTES,
        help="largest result a call may return; larger ones fail with resource_exhausted "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--loop-blocked-after",
        type=_positive,
        default=DEFAULT_LOOP_BLOCKED_AFTER,
        help="seconds a call's async code may block the event loop before it is logged and counted "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        default=DEFAULT_LOG_LEVEL,
        choices=LOG_LEVELS,
        help="'warning' silences the per-call log lines (default %(default)s)",
    )
    parser.add_argument("--debug", action="store_true", help="include tracebacks in error results")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="serve on a non-loopback --host without TOOLMESH_POD_TOKEN: anyone who reaches the "
        "port can list and call the functions (default: refuse to start)",
    )
    # Internal: how the gateway provisions pods (see template.py).
    parser.add_argument("--template", choices=TEMPLATE_MODES, help=argparse.SUPPRESS)
    parser.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--spawn-id", help=argparse.SUPPRESS)
    parser.add_argument("--socket-path", help=argparse.SUPPRESS)
    parser.add_argument("--socket-dir", help=argparse.SUPPRESS)
    parser.add_argument("--grpc-socket", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-socket", help=argparse.SUPPRESS)
    parser.add_argument("--liveness-socket", help=argparse.SUPPRESS)
