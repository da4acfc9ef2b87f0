"""How the gateway reaches runtimes: the `RuntimePool` seam and the serverless pool behind it.

Everything the gateway does with runtimes goes through a pool, so how pods are
provisioned can change without touching the rest. `Pool` runs pods on demand
for runtimes given as `modules` (a template process per runtime forks them;
see replicas.py for scaling) and connects to runtimes given as an `address`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CollectorRegistry

from toolmesh.config import RuntimeConfig
from toolmesh.errors import FunctionNotFound
from toolmesh.gateway.launcher import Template
from toolmesh.gateway.metrics import PoolMetrics
from toolmesh.gateway.replicas import ReplicaSet
from toolmesh.gateway.runtime_client import RuntimeClient
from toolmesh.runtimes.executor import Call
from toolmesh.runtimes.results import Content, Result
from toolmesh.runtimes.spec import FunctionSpec, NamespaceSpec

#: Environment variables that tell a pod how to reach the mesh for ctx.invoke.
MESH_ADDRESS_ENV = "TOOLMESH_MESH_ADDRESS"
MESH_TOKEN_ENV = "TOOLMESH_MESH_TOKEN"


class RuntimePool(Protocol):
    """What the gateway needs from whatever runs its runtimes."""

    def runtimes(self) -> Sequence[str]: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def readiness(self) -> Mapping[str, bool]:
        """Whether each runtime can take calls now (or as soon as a pod starts)."""
        ...

    async def list_functions(self, runtime: str) -> tuple[list[FunctionSpec], list[NamespaceSpec]]: ...

    async def invoke(self, runtime: str, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        """Run a call; `idempotent` calls may be retried once on another pod."""
        ...

    def stream(self, runtime: str, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]: ...


@dataclass(frozen=True, slots=True)
class MeshAccess:
    """Where pods send ctx.invoke calls for functions they do not host themselves."""

    address: str
    token: str


class Pool:
    """Serverless pods for `modules` runtimes; plain connections for `address` runtimes."""

    def __init__(
        self,
        runtimes: Sequence[RuntimeConfig],
        mesh: MeshAccess | None = None,
        metrics: PoolMetrics | None = None,
    ) -> None:
        self._configs = {r.name: r for r in runtimes}
        self._mesh = mesh
        self._metrics = metrics or PoolMetrics(CollectorRegistry(), list(self._configs))
        self.sets: dict[str, ReplicaSet] = {}
        self._remotes: dict[str, RuntimeClient] = {}

    def runtimes(self) -> Sequence[str]:
        return list(self._configs)

    async def start(self) -> None:
        """Start every runtime's template (at once), then their `min_replicas` pods."""
        try:
            local = [c for c in self._configs.values() if c.address is None]
            for config in self._configs.values():
                if config.address is not None:
                    self._remotes[config.name] = RuntimeClient(config.name, config.address)
            templates = await asyncio.gather(
                *(Template.start(config, self._environment(config)) for config in local),
                return_exceptions=True,
            )
            for config, template in zip(local, templates, strict=True):
                if isinstance(template, Template):
                    self.sets[config.name] = ReplicaSet(config, template, self._metrics)
            for failure in templates:
                if isinstance(failure, BaseException):
                    raise failure
            await asyncio.gather(*(replicas.start() for replicas in self.sets.values()))
        except BaseException:
            await self.close()
            raise

    def _environment(self, config: RuntimeConfig) -> Mapping[str, str]:
        env = dict(os.environ)
        env.update(config.env)
        if self._mesh is not None:
            env[MESH_ADDRESS_ENV] = self._mesh.address
            env[MESH_TOKEN_ENV] = self._mesh.token
        return env

    def readiness(self) -> Mapping[str, bool]:
        ready = {name: replicas.ready for name, replicas in self.sets.items()}
        ready.update({name: True for name in self._remotes})
        return {name: ready.get(name, False) for name in self._configs}

    def _set(self, runtime: str) -> ReplicaSet | RuntimeClient:
        found = self.sets.get(runtime) or self._remotes.get(runtime)
        if found is None:
            raise FunctionNotFound(f"no runtime named {runtime!r}")
        return found

    async def list_functions(self, runtime: str) -> tuple[list[FunctionSpec], list[NamespaceSpec]]:
        target = self._set(runtime)
        if isinstance(target, ReplicaSet):
            return list(target.template.specs), list(target.template.namespaces)
        return await target.list_functions()

    async def invoke(self, runtime: str, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        target = self._set(runtime)
        if isinstance(target, ReplicaSet):
            return await target.invoke(call, timeout, idempotent=idempotent)
        return await target.invoke(call, timeout)

    async def stream(self, runtime: str, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]:
        async for event in self._set(runtime).stream(call, timeout):
            yield event

    async def close(self) -> None:
        """Stop every runtime's pods (they drain) and templates, at once."""
        sets, self.sets = list(self.sets.values()), {}
        remotes, self._remotes = list(self._remotes.values()), {}
        await asyncio.gather(*(s.close() for s in sets), *(r.close() for r in remotes))
