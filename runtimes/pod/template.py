"""A template process: a runtime's modules loaded once, pods forked from it on demand.

Starting a pod from scratch costs an interpreter, grpc and the user's imports
(hundreds of milliseconds); forking a process that already holds them costs a
few. This is the zygote design of Android and of serverless platforms: the
gateway starts one template per runtime, which imports the modules, reports the
functions they offer, and then forks a fresh pod whenever the gateway asks.

gRPC's rule for fork is that no server or channel may exist in the parent, so the
template never creates one and never runs an event loop: it is a plain
`select()` loop over its command pipe and a SIGCHLD wake-up pipe.

The protocol, one JSON object per line:

    gateway -> template (stdin)     {"load": true}  (first, once: import the modules now)
                                    {"spawn": "<id>"}
    template -> gateway (stdout)    {"event": "template", "pid": ..., "catalog": "<base64 protobuf>"}
                                    {"event": "error", "error": "...", "traceback": "..."} (then it exits)
                                    {"event": "ready", "spawn": "<id>", "pid": ..., "grpc_socket": ..., ...}
                                    {"event": "failed", "spawn": "<id>", "error": "..."}
                                    {"event": "exit", "spawn": "<id>", "pid": ..., "status": ...}

Pods write their ready lines into the same pipe (each line is one atomic
write). Anything user code prints goes to stderr, never into the pipe (and in a pod,
framed as log lines: isolation/call_output.py). Each pod leads a session of its own
(pod_process.py), and listens only on Unix sockets in the gateway's 0700 socket
directory, which the template checks before it starts any pod. When
stdin closes (the gateway stopped or died) the template stops its pods with
SIGTERM, lets them drain, and exits; pods also get SIGTERM if the template
itself dies.

A template imports toolmesh and grpc, and warms up pydantic (most of its start-up),
before it reads the `load` line, and the user's modules only after it. So the gateway can start one
ahead of need, a standby (gateway/pool/launcher.py), and a hot reload costs only
the modules' own imports, in an interpreter that never imported them: no stale
module, import-time side effect or relative import behaves differently from a
first start.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import fcntl
import gc
import importlib
import json
import logging
import os
import select
import signal
import stat
import sys
import time
import traceback

from toolmesh.errors import DefinitionError
from toolmesh.protocol import wire
from toolmesh.runtimes.functions.discovery import host_function
from toolmesh.runtimes.functions.registry import Registry
from toolmesh.runtimes.pod.pod_process import die_with_parent, kill_group, lead_own_session
from toolmesh.runtimes.pod.serving import announce, run, use_working_directory
from toolmesh.runtimes.pod.settings import PodSettings

log = logging.getLogger("toolmesh.template")

#: Seconds past the drain grace that pods get before SIGKILL when the template stops.
KILL_MARGIN = 2.0


class Template:
    def __init__(self, settings: PodSettings, registry: Registry) -> None:
        #: The template's own settings; its pods get a copy each (see `_pod_settings`).
        self.settings = settings
        self.registry = registry
        #: Live pods: pid -> the spawn id they were asked for by.
        self.children: dict[int, str] = {}
        self._control = os.dup(1)
        # User code that prints must not corrupt the protocol: stdout becomes stderr.
        os.dup2(2, 1)
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
            fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
        self._stopping = False

    def _send(self, event: dict[str, object]) -> None:
        with contextlib.suppress(BrokenPipeError):  # the gateway is gone; stdin's EOF will stop us
            announce(event, self._control)

    def serve(self) -> int:
        catalog = wire.list_response(self.registry.specs(), self.registry.namespaces).SerializeToString()
        self._send({"event": "template", "pid": os.getpid(), "catalog": base64.b64encode(catalog).decode()})
        # Everything loaded so far is shared with every pod: keep the collector
        # from touching (and so copying) those pages in each of them.
        gc.collect()
        gc.freeze()
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._stop)
        # Ctrl-C in a terminal reaches the whole process group; the gateway decides.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        pending = b""
        while not self._stopping:
            try:
                readable, _, _ = select.select([0, self._wake_r], [], [])
            except InterruptedError:
                continue
            if self._wake_r in readable:
                with contextlib.suppress(BlockingIOError):
                    while os.read(self._wake_r, 512):
                        pass
                self._reap()
            if 0 in readable:
                chunk = os.read(0, 65536)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._command(line)
        self._stop_children()
        return 0

    def _stop(self, *_: object) -> None:
        self._stopping = True

    def _command(self, line: bytes) -> None:
        try:
            spawn = str(json.loads(line)["spawn"])
        except (ValueError, KeyError, TypeError):
            log.warning(
                "ignoring a malformed command", extra={"command": line[:200].decode(errors="replace")}
            )
            return
        try:
            pid = os.fork()
        except OSError as exc:
            self._send({"event": "failed", "spawn": spawn, "error": f"fork failed: {exc}"})
            return
        if pid == 0:
            self._become_pod(spawn)
        self.children[pid] = spawn

    def _become_pod(self, spawn: str) -> None:
        """In the forked child: turn into a pod, and never return into the template's loop."""
        code = 1
        try:
            lead_own_session()
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            os.close(self._wake_r)
            os.close(self._wake_w)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            die_with_parent(os.getppid())
            settings = self._pod_settings(spawn)
            if self.settings.template == "exec":
                os.set_inheritable(self._control, True)
                # The mesh's address and the tokens reach the new interpreter in the environment.
                environment = {**os.environ, **settings.environment.variables()}
                os.execve(sys.executable, [sys.executable, *settings.argv()], environment)
            code = run(settings, self.registry)
        except BaseException as exc:  # a forked child must always reach os._exit
            traceback.print_exc()
            with contextlib.suppress(OSError):
                self._send({"event": "failed", "spawn": spawn, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            logging.shutdown()
            os._exit(code)

    def _pod_settings(self, spawn: str) -> PodSettings:
        """In the forked child: the settings of the pod it becomes, a plain pod (not a template)
        that reports on the template's control pipe. With a socket directory it listens on
        Unix sockets there only: gRPC, the socket protocol, liveness and (if on) metrics."""
        socket_dir = self.settings.socket_dir
        # Short names: a Unix socket's whole path must fit in 107 bytes.
        base = f"{socket_dir}/{os.getpid()}" if socket_dir else None
        return dataclasses.replace(
            self.settings,
            template=None,
            socket_dir=None,
            socket_path=f"{base}.sock" if base else None,
            grpc_socket=f"{base}.grpc" if base else None,
            metrics_socket=f"{base}.prom" if base and self.settings.metrics_port is not None else None,
            liveness_socket=f"{base}.live" if base else None,
            ready_fd=self._control,
            spawn_id=spawn,
        )

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            spawn = self.children.pop(pid, "")
            # What its functions started and left behind goes with it (its group outlives it).
            kill_group(pid)
            code = os.waitstatus_to_exitcode(status)
            self._send({"event": "exit", "spawn": spawn, "pid": pid, "status": code})

    def _stop_children(self) -> None:
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.settings.drain_grace + KILL_MARGIN
        while self.children and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.02)
        for pid in self.children:
            kill_group(pid)
        while self.children:
            self._reap()
            time.sleep(0.01)


class UnsafeSocketDirectory(Exception):
    """The socket directory could be entered by another user."""


def check_socket_dir(path: str) -> None:
    """Pods trust whoever can connect to their sockets: the directory must be this user's own,
    mode 0700 (what tempfile.mkdtemp makes), and not a symbolic link."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise UnsafeSocketDirectory(
            f"socket directory {path} must be a directory of this user's with mode 0700 "
            f"(it is {stat.filemode(info.st_mode)}, owner {info.st_uid})"
        )


def probe(text: str, count: int = 1) -> str:
    """A function hosted only to warm up (`warm_up`)."""
    return text * count


def warm_up() -> None:
    """Host a function and list it, as loading the modules will: what that imports on first use
    (pydantic's schema generation, ~0.15 s) is then imported before the `load` line."""
    wire.list_response([host_function(probe).spec], []).SerializeToString()


def wait_for_load() -> bool:
    """Block until the gateway's `load` line; False if stdin closed first (a standby the
    gateway no longer wants). Read a byte at a time: nothing after the line is ours yet."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            return False
        line += chunk
    if json.loads(line).get("load") is not True:
        raise ValueError(f"expected the load command, got {line[:200]!r}")
    return True


def run_template(settings: PodSettings) -> int:
    """Once told to (the `load` line), load the modules, report them, then start pods on
    request (as `settings.template` says) until stdin closes."""
    use_working_directory()
    die_with_parent(os.getppid())
    if settings.socket_dir is not None:
        check_socket_dir(settings.socket_dir)
    warm_up()
    if not wait_for_load():
        return 0
    # A standby may have listed the modules' directories long before they were edited.
    importlib.invalidate_caches()
    try:
        registry = Registry.from_modules(settings.modules)
    except DefinitionError as exc:
        # The gateway shows why (a hot reload keeps the old version serving and reports this).
        trace = "".join(traceback.format_exception(exc.__cause__ or exc))
        with contextlib.suppress(OSError):
            announce({"event": "error", "error": str(exc), "traceback": trace}, 1)
        raise
    except KeyboardInterrupt:
        # The gateway stopped while the modules loaded: it interrupts a template so that a stdio
        # MCP server's listing ends its server (gateway/pool/launcher.py). Nothing to report.
        return 130
    return Template(settings, registry).serve()
