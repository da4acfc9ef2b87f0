"""A stdio MCP server as a runtime: its pods (the pool's, like any) serve the bridge module
(runtimes/mcp/), told here which server to start and under which namespace."""

from __future__ import annotations

from toolmesh.config.runtime_config import RuntimeConfig
from toolmesh.runtimes import mcp


def bridge_environment(config: RuntimeConfig) -> dict[str, str]:
    """What the pods of an `mcp_command` runtime need in their environment."""
    return mcp.bridge_environment(config.mcp_command, config.name, config.roots, passed_environment(config))


def passed_environment(config: RuntimeConfig) -> list[str]:
    """The variables of its pods' environment a runtime's stdio server gets besides the common ones."""
    return [*config.env, *config.inherit_env]
