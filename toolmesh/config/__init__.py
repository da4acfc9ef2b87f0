"""`toolmesh.toml`, read once at start-up into typed, validated objects (see mesh_config.py for
the file's shape). The gateway's side: the runtimes never import it (they take their defaults
from toolmesh/protocol/defaults.py).

mesh_config.py      the whole file: `MeshConfig` and its sections, `load_config`, `ConfigError`
runtime_config.py   ``[[runtimes]]`` entries and ``[function_state]``
jobs_config.py      ``[jobs]`` and ``[[triggers]]``
oauth_config.py     ``[oauth]``
config_defaults.py  the gateway's defaults, each a named constant
config_sources.py   where a command's config comes from (--config, ./toolmesh.toml, --module)
"""

from __future__ import annotations

from toolmesh.config.jobs_config import JobsConfig, TriggerConfig
from toolmesh.config.mesh_config import (
    EXAMPLE_MODULES,
    ChatConfig,
    ConfigError,
    GatewayConfig,
    KeyConfig,
    KubeScalerConfig,
    LlmConfig,
    McpConfig,
    MeshConfig,
    RouterConfig,
    StateConfig,
    check_state_url,
    default_config,
    hash_key,
    load_config,
    parse_config,
    settled_value,
)
from toolmesh.config.oauth_config import OAuthConfig
from toolmesh.config.runtime_config import FunctionStateConfig, RuntimeConfig
from toolmesh.directories import ProjectConfig

__all__ = [
    "EXAMPLE_MODULES",
    "ChatConfig",
    "ConfigError",
    "FunctionStateConfig",
    "GatewayConfig",
    "JobsConfig",
    "KeyConfig",
    "KubeScalerConfig",
    "LlmConfig",
    "McpConfig",
    "MeshConfig",
    "OAuthConfig",
    "ProjectConfig",
    "RouterConfig",
    "RuntimeConfig",
    "StateConfig",
    "TriggerConfig",
    "check_state_url",
    "default_config",
    "hash_key",
    "load_config",
    "parse_config",
    "settled_value",
]
