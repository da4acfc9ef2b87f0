"""How the gateway reaches runtimes: the `RuntimePool` seam and its first implementation.

Everything the gateway does with runtimes goes through a pool, so how pods are
provisioned (one child process each here; on demand, scaled and replaced later;
Kubernetes Services on a cluster) can change without touching the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from toolmesh.config import RuntimeConfig
from toolmesh.errors import FunctionNotFound, Unavailable
from toolmesh.gateway.runtime_client import RuntimeClient
from toolmesh.runtimes.executor import Call
from toolmesh.runtimes.results import Content, Result
from toolmesh.runtimes.spec import FunctionSpec, NamespaceSpec

log = logging.getLogger("toolmesh.pool")

#: Seconds a pod gets to print its ready line.
STARTUP_TIMEOUT = 30.0
#: Environment variables that tell a pod how to reach the mesh for ctx.invoke.
MESH_ADDRESS_ENV = "TOOLMESH_MESH_ADDRESS"
MESH_TOKEN_ENV = "TOOLMESH_MESH_TOKEN"


class RuntimePool(Protocol):
    """What the gateway needs from whatever runs its runtimes."""

    def runtimes(self) -> Sequence[str]: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def readiness(self) -> Mapping[str, bool]:
        """Whether each runtime can take calls now."""
        ...

    async def list_functions(self, runtime: str) -> tuple[list[FunctionSpec], list[NamespaceSpec]]: ...

    async def invoke(self, runtime: str, call: Call, timeout: float) -> Result: ...

    def stream(self, runtime: str, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]: ...


@dataclass(frozen=True, slots=True)
class MeshAccess:
    """Where pods send ctx.invoke calls for functions they do not host themselves."""

    address: str
    token: str


@dataclass
class _Pod:
    config: RuntimeConfig
    process: asyncio.subprocess.Process | None
    client: RuntimeClient


class LocalPool:
    """One pod per runtime: a child process for `modules`, or a connection to `address`.

    Pods start with the gateway and stop with it. (Scaling, replacing crashed pods
    and scale-to-zero belong to the serverless pool that replaces this one.)
    """

    def __init__(self, runtimes: Sequence[RuntimeConfig], mesh: MeshAccess | None = None) -> None:
        self._configs = {r.name: r for r in runtimes}
        self._mesh = mesh
        self._pods: dict[str, _Pod] = {}

    def runtimes(self) -> Sequence[str]:
        return list(self._configs)

    async def start(self) -> None:
        try:
            for config in self._configs.values():
                self._pods[config.name] = await self._start(config)
        except BaseException:
            await self.close()
            raise

    async def _start(self, config: RuntimeConfig) -> _Pod:
        if config.address is not None:
            return _Pod(config, None, RuntimeClient(config.name, config.address))
        command = [sys.executable, "-m", "toolmesh", "runtime", "--host", "127.0.0.1", "--port", "0"]
        command += ["--metrics-port", "0", "--timeout", str(config.timeout)]
        command += ["--max-inflight", str(config.max_inflight), "--workers", str(config.workers)]
        command += ["--drain-grace", str(config.drain_grace)]
        for module in config.modules:
            command += ["--module", module]
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, env=self._environment(config)
        )
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), STARTUP_TIMEOUT)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise Unavailable(f"runtime {config.name!r} did not start within {STARTUP_TIMEOUT:g} s") from None
        if not line:
            code = await process.wait()
            raise Unavailable(
                f"runtime {config.name!r} exited with status {code} while starting (see its log)"
            )
        ready = json.loads(line)
        address = f"127.0.0.1:{ready['grpc_port']}"
        log.info("runtime started", extra={"runtime": config.name, "address": address, "pid": process.pid})
        return _Pod(config, process, RuntimeClient(config.name, address))

    def _environment(self, config: RuntimeConfig) -> Mapping[str, str]:
        env = dict(os.environ)
        env.update(config.env)
        if self._mesh is not None:
            env[MESH_ADDRESS_ENV] = self._mesh.address
            env[MESH_TOKEN_ENV] = self._mesh.token
        return env

    def readiness(self) -> Mapping[str, bool]:
        ready = {}
        for name in self._configs:
            pod = self._pods.get(name)
            ready[name] = pod is not None and (pod.process is None or pod.process.returncode is None)
        return ready

    def _client(self, runtime: str) -> RuntimeClient:
        try:
            pod = self._pods[runtime]
        except KeyError:
            raise FunctionNotFound(f"no runtime named {runtime!r}") from None
        if pod.process is not None and pod.process.returncode is not None:
            raise Unavailable(
                f"runtime {runtime!r} has exited (status {pod.process.returncode})", retry_after=1.0
            )
        return pod.client

    async def list_functions(self, runtime: str) -> tuple[list[FunctionSpec], list[NamespaceSpec]]:
        return await self._client(runtime).list_functions()

    async def invoke(self, runtime: str, call: Call, timeout: float) -> Result:
        return await self._client(runtime).invoke(call, timeout)

    async def stream(self, runtime: str, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        async for event in self._client(runtime).stream(call, timeout):
            yield event

    async def close(self) -> None:
        """Stop the pods this pool started (SIGTERM, then SIGKILL after their drain grace)."""
        pods, self._pods = list(self._pods.values()), {}
        for pod in pods:
            if pod.process is not None and pod.process.returncode is None:
                pod.process.send_signal(signal.SIGTERM)
        for pod in pods:
            await pod.client.close()
            if pod.process is None:
                continue
            try:
                await asyncio.wait_for(pod.process.wait(), pod.config.drain_grace + 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    pod.process.kill()
                await pod.process.wait()
