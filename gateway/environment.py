"""Everything the gateway reads from its environment, read once at start-up.

    keys.*.key_env                 API keys (kept only as their hashes)
    runtimes.*.token_env           the tokens of runtimes given by `address` (their pods' own)
    runtimes.*.headers.*.env       header values an `openapi`, `mcp_url` or `grpc_reflection` runtime sends
    runtimes.*.query.*.env         query parameters an `openapi` runtime sends (API keys in the query)
    runtimes.*.tls.{ca,cert,key}.env  PEM text a `grpc_reflection` runtime's TLS uses
    chat.api_key_env               the chat upstream's API key
    router.llm.api_key_env         the argument extractor's API key
    jobs.callback_secret_env       the secret that signs job result callbacks
    mcp.state_secret_env           the secret that seals MCP `requestState` (calls that ask)
    triggers.*.secret_env          the secrets webhooks' signatures are made with
    TOOLMESH_MESH_TOKEN            the pods' token on Kubernetes (else the gateway makes one up)
    KUBERNETES_SERVICE_HOST/PORT   where the API server is, for [kube_scaler]
    OTEL_*                         whether to trace, and as which service (toolmesh/tracing.py)
    TOOLMESH_STATE_URL             the shared state's Redis (overrides [state] url; from a Secret)
    the rest                       passed on to the pods the gateway starts

A variable that the config names but the environment lacks fails start-up with a
ConfigError that names it. Nothing deeper in the gateway reads `os.environ`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolmesh.config import (
    ChatConfig,
    ConfigError,
    KeyConfig,
    MeshConfig,
    RuntimeConfig,
    check_state_url,
    hash_key,
)
from toolmesh.gateway.pool.kube_scaler import HOST_ENV, PORT_ENV
from toolmesh.gateway.sources.factory import runtime_headers, runtime_query, runtime_tls
from toolmesh.gateway.triggers.trigger_host import trigger_secrets
from toolmesh.protocol.pod_env import MESH_TOKEN_ENV
from toolmesh.tracing import GATEWAY_SERVICE, service_to_trace


@dataclass(frozen=True)
class GatewayEnvironment:
    #: Configured keys by the hash of the key.
    keys: Mapping[str, KeyConfig] = field(repr=False)
    #: The token the mesh's own pods send for ctx.invoke.
    mesh_token: str = field(repr=False)
    chat_api_key: str | None = field(repr=False)
    llm_api_key: str | None = field(repr=False)
    #: The Kubernetes service variables the kubelet sets in a pod (empty elsewhere).
    kubernetes: Mapping[str, str]
    #: What the gateway's own pods inherit.
    pods: Mapping[str, str] = field(repr=False)
    #: The token each runtime with `token_env` requires, by runtime name.
    runtime_tokens: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: The headers each service runtime (`openapi`, `mcp_url`, `grpc_reflection`) sends, by runtime name.
    runtime_headers: Mapping[str, Mapping[str, str]] = field(default_factory=dict, repr=False)
    #: The runtimes as the pool serves them: `config.runtimes` with their TLS `{ env = ... }` values read.
    runtimes: Sequence[RuntimeConfig] = ()
    #: The service name to trace as; None: tracing is off.
    tracing: str | None = None
    #: Where the state shared with other replicas lives (a Redis URL); None: in this process.
    state_url: str | None = field(default=None, repr=False)
    #: The secret that signs job callbacks; None: callbacks are refused.
    callback_secret: str | None = field(default=None, repr=False)
    #: The secret that seals MCP `requestState`; None: a random key of this process.
    mcp_state_secret: str | None = field(default=None, repr=False)
    #: Each webhook trigger's signing secret, by trigger name.
    trigger_secrets: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, config: MeshConfig, environ: Mapping[str, str]) -> GatewayEnvironment:
        llm = config.router.llm
        llm_key = None
        if llm is not None and llm.api_key_env:
            llm_key = environ.get(llm.api_key_env)
            if not llm_key:
                raise ConfigError(f"router.llm: environment variable {llm.api_key_env} is not set")
        return cls(
            keys=_key_hashes(config, environ),
            # On Kubernetes the runtime pods are not the gateway's children: they share a token
            # from a Secret (deploy/) instead of the one a gateway makes up for the pods it starts.
            mesh_token=environ.get(MESH_TOKEN_ENV) or secrets.token_urlsafe(32),
            chat_api_key=_chat_api_key(config.chat, environ) if config.chat.enabled else None,
            llm_api_key=llm_key,
            kubernetes={name: environ[name] for name in (HOST_ENV, PORT_ENV) if name in environ},
            pods=dict(environ),
            runtime_tokens=_runtime_tokens(config, environ),
            runtime_headers=_runtime_headers(config, environ),
            runtimes=tuple(
                runtime_query(runtime_tls(runtime, environ), environ) for runtime in config.runtimes
            ),
            tracing=service_to_trace(environ, GATEWAY_SERVICE),
            state_url=state_url(config, environ),
            callback_secret=_callback_secret(config, environ),
            mcp_state_secret=_mcp_state_secret(config, environ),
            trigger_secrets=trigger_secrets(config.triggers, environ),
        )


def _runtime_headers(config: MeshConfig, env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The headers each runtime with `headers` sends, their `{ env = ... }` values read."""
    return {runtime.name: runtime_headers(runtime, env) for runtime in config.runtimes if runtime.headers}


#: Fewest characters of `[mcp] state_secret_env`'s secret (the SDK's AES-256-GCM key derivation).
MIN_STATE_SECRET = 32


def _mcp_state_secret(config: MeshConfig, env: Mapping[str, str]) -> str | None:
    name = config.mcp.state_secret_env
    if name is None:
        return None
    value = env.get(name)
    if not value:
        raise ConfigError(f"mcp: environment variable {name} is not set")
    if len(value.encode()) < MIN_STATE_SECRET:
        raise ConfigError(f"mcp: the secret in {name} must be at least {MIN_STATE_SECRET} bytes")
    return value


def _callback_secret(config: MeshConfig, env: Mapping[str, str]) -> str | None:
    name = config.jobs.callback_secret_env
    if name is None:
        return None
    value = env.get(name)
    if not value:
        raise ConfigError(f"jobs: environment variable {name} is not set")
    return value


def _runtime_tokens(config: MeshConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The token of each runtime with `token_env`: what its pods (at its `address`) require, sent
    as ``authorization: Bearer <token>``. The pods the gateway starts need none."""
    tokens = {}
    for runtime in config.runtimes:
        if runtime.token_env is not None and runtime.address is None:
            raise ConfigError(
                f"runtimes.{runtime.name}: `token_env` goes with `address` (the gateway's own pods need none)"
            )
        if runtime.token_env is not None:
            value = env.get(runtime.token_env)
            if not value:
                raise ConfigError(
                    f"runtimes.{runtime.name}: environment variable {runtime.token_env} is not set"
                )
            tokens[runtime.name] = value
    return tokens


#: Names the shared state's Redis, overriding `[state] url` (on Kubernetes, from a Secret: the URL
#: may hold a password).
STATE_URL_ENV = "TOOLMESH_STATE_URL"


def state_url(config: MeshConfig, env: Mapping[str, str]) -> str | None:
    """The shared state's Redis URL (TOOLMESH_STATE_URL, else `[state] url`), or None."""
    value = env.get(STATE_URL_ENV)
    if value:
        return check_state_url(value, STATE_URL_ENV)
    return config.state.url


def _key_hashes(config: MeshConfig, env: Mapping[str, str]) -> dict[str, KeyConfig]:
    """Each configured key by its hash; keys given through the environment are read from `env`."""
    found: dict[str, KeyConfig] = {}
    for key in config.keys:
        if key.key_hash is not None:
            digest = key.key_hash
        else:
            assert key.key_env is not None
            value = env.get(key.key_env)
            if not value:
                raise ConfigError(f"keys.{key.name}: environment variable {key.key_env} is not set")
            digest = hash_key(value)
        found[digest] = key
    return found


def _chat_api_key(config: ChatConfig, env: Mapping[str, str]) -> str | None:
    """The upstream LLM's API key from `env` (None: send no key)."""
    if config.api_key_env is None:
        return None
    value = env.get(config.api_key_env)
    if not value:
        raise ConfigError(f"chat: environment variable {config.api_key_env} is not set")
    return value
