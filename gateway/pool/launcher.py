"""The gateway's side of a template process: start it, read its catalog, ask it for pods.

See toolmesh/runtimes/pod/template.py for the process itself and its line protocol.

The template's end is noticed by polling its exit status, not by the end of its
output: its pods share that pipe and keep it open while they drain. A template
that leaves a spawn request unanswered (no pod ready, failed or exited for it)
for `startup_timeout` + `HANG_MARGIN` seconds is taken as hung and killed, so
that whoever keeps it (template_keeper.py) starts a new one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import math
import os
import shutil
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolmesh.config import RuntimeConfig
from toolmesh.errors import Unavailable
from toolmesh.gateway.pool.socket_dirs import make_socket_dir
from toolmesh.protocol import wire
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec
from toolmesh.runtimes.pod.pod_process import kill_group
from toolmesh.runtimes.pod.settings import PodSettings
from toolmesh.v1 import function_pb2

log = logging.getLogger("toolmesh.pool")

#: Seconds a template gets to import its modules and report them.
TEMPLATE_START_TIMEOUT = 60.0
#: Largest protocol line (a catalog of thousands of functions fits easily).
LINE_LIMIT = 64 * 1024 * 1024
#: How often the template's exit status is looked at: its death is noticed within this.
WATCH_INTERVAL = 0.1
#: Seconds past `startup_timeout` a spawn request may go unanswered before the template is
#: taken as hung (a late pod still answers it, so a slow start alone does not count).
HANG_MARGIN = 2.0
#: Seconds a template interrupted while it loads (the gateway stops) gets to end what it started.
INTERRUPT_GRACE = 5.0


@dataclass(frozen=True, slots=True)
class Spawned:
    """A pod a template forked, as its ready line describes it."""

    pid: int
    #: The pod's gRPC address: a Unix socket (``unix:/...``) in the runtime's socket directory.
    address: str
    #: The Unix socket of the pod's /metrics, if it serves them.
    metrics_socket: str | None
    #: The pod's Unix socket for unary calls, when the runtime uses that transport.
    socket: str | None
    #: Where a thread of the pod answers liveness pings (whatever its event loop does).
    liveness: str | None = None


ExitHandler = Callable[[int, int], None]


class ModulesFailed(Unavailable):
    """A runtime's modules failed to import (or offer no functions): `error` says why,
    `traceback` is the import's traceback as the template printed it."""

    def __init__(self, runtime: str, error: str, traceback: str) -> None:
        super().__init__(f"runtime {runtime!r} failed to load its modules: {error}")
        self.runtime = runtime
        self.error = error
        self.traceback = traceback


async def _hello(config: RuntimeConfig, process: asyncio.subprocess.Process) -> dict[str, Any] | None:
    """The template's first protocol line (its catalog, or why its modules failed), skipping
    what the modules printed while they loaded; None if it exited first."""
    assert process.stdout is not None
    while line := await process.stdout.readline():
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if isinstance(event, dict) and "event" in event:
            return event
        log.warning(
            "a runtime's modules printed to stdout while loading",
            extra={"runtime": config.name, "line": line[:200].decode(errors="replace")},
        )
    return None


def template_settings(config: RuntimeConfig, socket_dir: str) -> PodSettings:
    """The settings of a runtime's template process, which its pods inherit: its pods listen
    on Unix sockets in `socket_dir` only (gRPC, the socket protocol, metrics), never on a TCP
    port (the host and ports here are unused). The mesh's address and token reach it in the
    environment the pool gives it."""
    return PodSettings(
        modules=config.pod_modules,
        host="127.0.0.1",
        port=0,
        metrics_port=0,
        drain_grace=config.drain_grace,
        timeout=config.timeout,
        max_inflight=config.max_inflight,
        workers=config.workers,
        max_memory_mb=config.max_memory_mb,
        max_result_bytes=config.max_result_bytes,
        loop_blocked_after=config.loop_blocked_after,
        log_level=config.log_level,
        template=config.spawn,
        socket_dir=socket_dir,
    )


async def _interrupt(process: asyncio.subprocess.Process) -> None:
    """End a template still loading its modules. SIGINT first: a stdio MCP server's listing, which
    runs in a process group of its own (runtimes/mcp/server_process.py), is then cancelled and
    ends that group; what is left of its own group is killed after."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), INTERRUPT_GRACE)
    kill_group(process.pid)
    await process.wait()


class LaunchedTemplate:
    """A template process that has imported toolmesh and grpc and waits to be told to load the
    runtime's modules (template.py's `load` line): what `load()` still costs is the modules'
    own imports. One launched ahead of need is a standby (`Standbys`, below)."""

    def __init__(
        self,
        config: RuntimeConfig,
        process: asyncio.subprocess.Process,
        socket_dir: str,
        env: Mapping[str, str],
    ) -> None:
        self.config = config
        self.process = process
        self.socket_dir = socket_dir
        #: The environment it was started with (a standby serves only the same one).
        self.env = dict(env)

    @classmethod
    async def launch(cls, config: RuntimeConfig, env: Mapping[str, str]) -> LaunchedTemplate:
        socket_dir = make_socket_dir(config.name)
        command = [sys.executable, *template_settings(config, socket_dir).argv()]
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=env,
                limit=LINE_LIMIT,
                # Its own group, which the gateway can kill whole; Ctrl-C reaches the gateway only.
                start_new_session=True,
            )
        except BaseException:
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise
        return cls(config, process, socket_dir, env)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def load(self) -> TemplateProcess:
        """Have it import the modules and wait for its catalog: a running template, or
        ModulesFailed (the import's error) or Unavailable, and the process is gone."""
        config, process, socket_dir = self.config, self.process, self.socket_dir
        assert process.stdin is not None
        with contextlib.suppress(ConnectionError):  # it died already: _hello sees its end
            process.stdin.write(json.dumps({"load": True}).encode() + b"\n")
        try:
            hello = await asyncio.wait_for(_hello(config, process), TEMPLATE_START_TIMEOUT)
        except asyncio.CancelledError:
            await _interrupt(process)
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise
        except TimeoutError:
            kill_group(process.pid)
            await process.wait()
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise Unavailable(
                f"runtime {config.name!r} did not load its modules within {TEMPLATE_START_TIMEOUT:g} s"
            ) from None
        if hello is None or hello.get("event") == "error":
            code = await process.wait()
            shutil.rmtree(socket_dir, ignore_errors=True)
            if hello is None:
                raise Unavailable(
                    f"runtime {config.name!r} exited with status {code} while loading its modules "
                    "(see its log)"
                )
            raise ModulesFailed(config.name, str(hello.get("error")), str(hello.get("traceback", "")))
        listing = function_pb2.ListFunctionsResponse.FromString(base64.b64decode(hello["catalog"]))
        specs = [wire.spec_from_proto(message) for message in listing.functions]
        namespaces = [NamespaceSpec(n.name, n.description) for n in listing.namespaces]
        log.info(
            "template started", extra={"runtime": config.name, "pid": process.pid, "functions": len(specs)}
        )
        return TemplateProcess(config, process, specs, namespaces, socket_dir)

    async def discard(self) -> None:
        """Stop it unloaded: stdin's end makes it exit at once."""
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            kill_group(self.process.pid)
            await self.process.wait()
        shutil.rmtree(self.socket_dir, ignore_errors=True)


class TemplateProcess:
    """One running template process. `on_exit(pid, status)` hears of every pod that ends."""

    def __init__(
        self,
        config: RuntimeConfig,
        process: asyncio.subprocess.Process,
        specs: list[FunctionSpec],
        namespaces: list[NamespaceSpec],
        socket_dir: str,
    ) -> None:
        self.config = config
        self.process = process
        self._socket_dir = socket_dir
        self.specs = specs
        self.namespaces = namespaces
        self.on_exit: ExitHandler = lambda pid, status: None
        #: Called once if the template process itself ends.
        self.on_template_exit: Callable[[int], None] = lambda status: None
        self._waiting: dict[str, asyncio.Future[Spawned]] = {}
        #: Spawn requests no event has answered yet -> when they were sent.
        self._unanswered: dict[str, float] = {}
        #: Whether the gateway killed it for leaving a spawn unanswered.
        self.hung = False
        self._ended = False
        self._ids = itertools.count(1)
        self._reader = asyncio.create_task(self._read())
        self._watcher = asyncio.create_task(self._watch())

    @classmethod
    async def start(cls, config: RuntimeConfig, env: Mapping[str, str]) -> TemplateProcess:
        """Start a template for `config` and wait for its catalog."""
        return await (await LaunchedTemplate.launch(config, env)).load()

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def spawn(self, timeout: float) -> Spawned:
        """Fork a new pod and wait until it serves."""
        if not self.alive:
            raise Unavailable(f"runtime {self.config.name!r} has no template process", retry_after=1.0)
        spawn = str(next(self._ids))
        ready: asyncio.Future[Spawned] = asyncio.get_running_loop().create_future()
        self._waiting[spawn] = ready
        self._unanswered[spawn] = asyncio.get_running_loop().time()
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps({"spawn": spawn}).encode() + b"\n")
            return await asyncio.wait_for(ready, timeout)
        except TimeoutError:
            raise Unavailable(
                f"a pod of runtime {self.config.name!r} did not start within {timeout:g} s", retry_after=1.0
            ) from None
        finally:
            self._waiting.pop(spawn, None)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            try:
                event = json.loads(line)
                self._dispatch(event)
            except (ValueError, KeyError, TypeError):
                log.warning("unreadable line from a template", extra={"runtime": self.config.name})

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        hang_after = self.config.startup_timeout + HANG_MARGIN
        while self.process.returncode is None:
            await asyncio.sleep(WATCH_INTERVAL)
            oldest = min(self._unanswered.values(), default=math.inf)
            if loop.time() - oldest > hang_after and self.process.returncode is None:
                log.error(
                    f"runtime {self.config.name!r}: its template process left a request for a pod "
                    f"unanswered for {hang_after:g} s; killing it",
                    extra={"runtime": self.config.name, "pid": self.process.pid},
                )
                self.hung = True
                kill_group(self.process.pid)
        self._end(self.process.returncode)

    def _end(self, status: int) -> None:
        if self._ended:
            return
        self._ended = True
        self._unanswered.clear()
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(Unavailable(f"runtime {self.config.name!r} stopped", retry_after=1.0))
        self.on_template_exit(status)

    def _dispatch(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        self._unanswered.pop(str(event.get("spawn")), None)
        waiting = self._waiting.get(str(event.get("spawn")))
        if kind == "exit":
            if waiting is not None and not waiting.done():
                waiting.set_exception(
                    Unavailable(
                        f"a pod of runtime {self.config.name!r} exited with status {event['status']} "
                        "while starting (see its log)"
                    )
                )
            self.on_exit(int(event["pid"]), int(event["status"]))
            return
        if waiting is None or waiting.done():
            if kind == "ready":
                # Nobody waits for it any more (its spawn timed out): don't leave it running.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(event["pid"]), signal.SIGTERM)
            return
        if kind == "ready":
            socket = event.get("socket") if self.config.transport == "socket" else None
            spawned = Spawned(
                int(event["pid"]),
                f"unix:{event['grpc_socket']}",
                event.get("metrics_socket"),
                socket,
                event.get("liveness_socket"),
            )
            waiting.set_result(spawned)
        elif kind == "failed":
            waiting.set_exception(
                Unavailable(f"runtime {self.config.name!r} could not start a pod: {event.get('error')}")
            )

    async def close(self) -> None:
        """Close stdin: the template stops its pods (they drain) and exits.

        Also for a template that already died: its pods (told by the kernel, see
        lifeline.py) drain on their own, and the wait is for them to close the pipe."""
        self._ended = True  # its end is asked for, not news
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), self.config.drain_grace + 10)
        except TimeoutError:
            kill_group(self.process.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.wait(), 5)
        for task in (self._watcher, self._reader):
            task.cancel()
        await asyncio.gather(self._watcher, self._reader, return_exceptions=True)
        shutil.rmtree(self._socket_dir, ignore_errors=True)


class Standbys:
    """At most one standby template per runtime: a template process started ahead of a reload, so
    the reload skips it.

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
