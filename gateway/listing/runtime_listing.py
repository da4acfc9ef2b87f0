"""Each runtime's functions, read without serving them (`toolmesh functions --config FILE`).

Every runtime is read as the gateway would at start: modules (and a stdio MCP server's bridge)
in a child process, a catalog file, the pods at an address, a service the gateway calls itself
(OpenAPI, remote MCP, gRPC reflection). One that cannot be read says why; the others still list.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from toolmesh.config import ConfigError, MeshConfig, RuntimeConfig
from toolmesh.errors import ToolmeshError
from toolmesh.gateway.pool.pool_metrics import PoolMetrics
from toolmesh.gateway.pool.remote_runtime import RemoteRuntime, read_modules
from toolmesh.gateway.sources.factory import runtime_headers, runtime_query, runtime_tls, service_runtime
from toolmesh.gateway.sources.stdio_mcp import bridge_environment
from toolmesh.runtimes.functions.spec import FunctionSpec, spec_to_dict


@dataclass(frozen=True)
class RuntimeListing:
    """One runtime's functions, or why they could not be read."""

    name: str
    kind: str
    specs: Sequence[FunctionSpec] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        listed: dict[str, Any] = {"name": self.name, "kind": self.kind}
        listed["functions"] = [spec_to_dict(spec) for spec in self.specs]
        if self.error is not None:
            listed["error"] = self.error
        return listed


def kind_of(runtime: RuntimeConfig) -> str:
    """The config key that says where the runtime's functions come from."""
    for key in ("openapi", "mcp_url", "grpc_reflection", "mcp_command", "address"):
        if getattr(runtime, key):
            return key
    return "modules"


async def list_runtimes(config: MeshConfig, environ: Mapping[str, str]) -> list[RuntimeListing]:
    """Every runtime of `config`, read at once, in the config's order."""
    return list(await asyncio.gather(*(_list(config, runtime, environ) for runtime in config.runtimes)))


async def _list(config: MeshConfig, runtime: RuntimeConfig, environ: Mapping[str, str]) -> RuntimeListing:
    kind = kind_of(runtime)
    try:
        specs = await _read(config, runtime, environ)
    except (ToolmeshError, ConfigError) as exc:
        return RuntimeListing(runtime.name, kind, error=_named(runtime, getattr(exc, "message", str(exc))))
    except OSError as exc:
        return RuntimeListing(runtime.name, kind, error=_named(runtime, str(exc)))
    return RuntimeListing(runtime.name, kind, [runtime.with_free_text(spec) for spec in specs])


def _named(runtime: RuntimeConfig, message: str) -> str:
    # Most causes name their runtime already; the others are made to.
    named = (f"runtime {runtime.name!r}", f"runtimes.{runtime.name}")
    return message if message.startswith(named) else f"runtime {runtime.name!r}: {message}"


async def _read(config: MeshConfig, runtime: RuntimeConfig, environ: Mapping[str, str]) -> list[FunctionSpec]:
    directory = config.directory
    if runtime.in_gateway:
        read = runtime_query(runtime_tls(runtime, environ), environ)
        service = service_runtime(read, runtime_headers(runtime, environ), directory)
        try:
            await service.start(strict=True)
            return list(service.specs)
        finally:
            await service.close()
    env = _child_environment(runtime, environ, directory)
    if runtime.mcp_command:
        return await read_modules(runtime.model_copy(update={"modules": runtime.pod_modules}), env)
    if runtime.address is None:
        return await read_modules(runtime, env)
    # Its modules, its catalog file, else its pods: as the gateway learns them.
    token = environ.get(runtime.token_env, "") if runtime.token_env else ""
    remote = RemoteRuntime(runtime, PoolMetrics(CollectorRegistry(), [runtime.name]), None, directory, token)
    try:
        await remote.start(env)
        return list(remote.specs)
    finally:
        await remote.close()


def _child_environment(
    runtime: RuntimeConfig, environ: Mapping[str, str], directory: Path | None
) -> dict[str, str]:
    """What the child that reads modules gets: as a pod's template would (the config's
    directory first on the path, the runtime's `env`, a stdio server's command)."""
    env = {**environ, **runtime.env}
    if runtime.mcp_command:
        env.update(bridge_environment(runtime))
    if directory is not None:
        env["PYTHONPATH"] = os.pathsep.join(part for part in (str(directory), env.get("PYTHONPATH")) if part)
    return env


def print_listing(path: str, fmt: str, strict: bool, environ: Mapping[str, str]) -> int:
    """`toolmesh functions --config PATH`: print every runtime's functions (`fmt` as for
    --module); each runtime that cannot be read is named on stderr with its cause. 1 if any was."""
    from toolmesh.config import load_config
    from toolmesh.gateway.core.tool_formats import openai_tool
    from toolmesh.runtimes.functions.spec import render_functions

    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"toolmesh functions: {exc}", file=sys.stderr)
        return 2
    listings = asyncio.run(list_runtimes(config, environ))
    for listing in listings:
        if listing.error is not None:
            print(f"toolmesh functions: {listing.error}", file=sys.stderr)
    if fmt == "json":
        print(json.dumps({"runtimes": [listing.to_dict() for listing in listings]}, indent=2))
    elif fmt == "openai":
        specs = [spec for listing in listings for spec in listing.specs if spec.feature is None]
        print(json.dumps([openai_tool(spec, strict=strict) for spec in specs], indent=2))
    else:
        for listing in listings:
            kept = [spec for spec in listing.specs if spec.feature is None]
            state = f"error: {listing.error}" if listing.error else f"{len(kept)} functions"
            print(f"# runtime {listing.name} ({listing.kind}): {state}")
            if kept:
                print(render_functions(kept))
    return 1 if any(listing.error is not None for listing in listings) else 0
