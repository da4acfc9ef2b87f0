"""The one place that picks the source serving a runtime's config (one with `in_gateway`), and what
that source reads from the gateway's environment: the headers (and an OpenAPI service's query
parameters) it sends its service, its TLS material given as `{ env = ... }` values."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from toolmesh.config import ConfigError
from toolmesh.config.runtime_config import HeaderFromEnv, RuntimeConfig
from toolmesh.config.tls_config import GrpcTls
from toolmesh.gateway.sources.base.service_runtime import ServiceRuntime
from toolmesh.gateway.sources.grpc_reflection import GrpcReflectionRuntime
from toolmesh.gateway.sources.openapi import OpenApiRuntime
from toolmesh.gateway.sources.remote_mcp import RemoteMcpRuntime


def service_runtime(
    config: RuntimeConfig, headers: Mapping[str, str], directory: Path | None = None
) -> ServiceRuntime:
    """The source that serves `config` (one with `in_gateway`), not started yet."""
    if config.openapi is not None:
        return OpenApiRuntime(config, headers, directory)
    if config.mcp_url is not None:
        return RemoteMcpRuntime(config, headers)
    if config.grpc_reflection is not None:
        return GrpcReflectionRuntime(config, headers, directory)
    raise ValueError(f"runtime {config.name!r} is not served by the gateway itself")


def runtime_headers(runtime: RuntimeConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The headers `runtime` sends its service, `{ env = ... }` values read from `env`."""
    headers = {}
    for name, value in runtime.headers.items():
        if isinstance(value, str):
            headers[name] = value
            continue
        text = env.get(value.env)
        if not text:
            raise ConfigError(
                f"runtimes.{runtime.name}: header {name}: environment variable {value.env} is not set"
            )
        headers[name] = value.prefix + text
    return headers


def runtime_query(runtime: RuntimeConfig, env: Mapping[str, str]) -> RuntimeConfig:
    """`runtime` with its `query` `{ env = ... }` values read from `env` (as `headers`' are)."""
    if not any(isinstance(value, HeaderFromEnv) for value in runtime.query.values()):
        return runtime
    query: dict[str, str | HeaderFromEnv] = {}
    for name, value in runtime.query.items():
        if isinstance(value, HeaderFromEnv):
            text = env.get(value.env)
            if not text:
                raise ConfigError(
                    f"runtimes.{runtime.name}: query {name}: environment variable {value.env} is not set"
                )
            value = value.prefix + text
        query[name] = value
    return runtime.model_copy(update={"query": query})


def runtime_tls(runtime: RuntimeConfig, env: Mapping[str, str]) -> RuntimeConfig:
    """`runtime` with its TLS `{ env = ... }` values (`ca`, `cert`, `key`) read from `env`; a
    variable that is unset or holds no PEM text is a ConfigError naming it."""
    if not isinstance(runtime.tls, GrpcTls) or not runtime.tls.variables():
        return runtime
    try:
        tls = runtime.tls.read(env)
    except ValueError as exc:
        raise ConfigError(f"runtimes.{runtime.name}: {exc}") from None
    return runtime.model_copy(update={"tls": tls})
