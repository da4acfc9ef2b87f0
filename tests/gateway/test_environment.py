"""The gateway's environment: read once, secrets named when missing and never shown."""

from __future__ import annotations

import pytest

from toolmesh.config import ConfigError, hash_key, parse_config
from toolmesh.gateway.environment import GatewayEnvironment

CONFIG = parse_config(
    {
        "keys": [{"name": "ci", "key_env": "CI_KEY"}],
        "chat": {"upstream_url": "http://127.0.0.1:9/v1", "api_key_env": "UPSTREAM_KEY"},
        "router": {"llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "LLM_KEY"}},
    }
)
ENVIRON = {
    "CI_KEY": "ci-secret",
    "UPSTREAM_KEY": "sk-up",
    "LLM_KEY": "sk-llm",
    "TOOLMESH_MESH_TOKEN": "shared",
    "KUBERNETES_SERVICE_HOST": "10.0.0.1",
    "KUBERNETES_SERVICE_PORT": "443",
    "PATH": "/usr/bin",
}


def test_everything_is_read_at_once() -> None:
    environment = GatewayEnvironment.read(CONFIG, ENVIRON)
    assert set(environment.keys) == {hash_key("ci-secret")}
    assert (environment.chat_api_key, environment.llm_api_key) == ("sk-up", "sk-llm")
    assert environment.mesh_token == "shared"
    assert environment.kubernetes == {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert environment.pods["PATH"] == "/usr/bin"
    shown = repr(environment)
    assert not any(secret in shown for secret in ("ci-secret", "sk-up", "sk-llm", "shared"))


def test_a_gateway_that_starts_its_own_pods_makes_up_their_token() -> None:
    environ = {k: v for k, v in ENVIRON.items() if k != "TOOLMESH_MESH_TOKEN"}
    first, second = (GatewayEnvironment.read(CONFIG, environ) for _ in range(2))
    assert len(first.mesh_token) >= 32 and first.mesh_token != second.mesh_token


@pytest.mark.parametrize(
    ("missing", "named"), [("CI_KEY", "keys.ci"), ("UPSTREAM_KEY", "chat"), ("LLM_KEY", "router.llm")]
)
def test_a_missing_secret_is_named(missing: str, named: str) -> None:
    environ = {k: v for k, v in ENVIRON.items() if k != missing}
    with pytest.raises(ConfigError, match=rf"{named}: environment variable {missing} is not set"):
        GatewayEnvironment.read(CONFIG, environ)


def test_the_state_url_comes_from_the_environment_before_the_config() -> None:
    config = parse_config({"state": {"url": "redis://from-config:6379/0"}})
    assert GatewayEnvironment.read(config, {}).state_url == "redis://from-config:6379/0"
    from_secret = {"TOOLMESH_STATE_URL": "redis://:secret@from-env:6379/0"}
    environment = GatewayEnvironment.read(config, from_secret)
    assert environment.state_url == "redis://:secret@from-env:6379/0" and "secret" not in repr(environment)
    assert GatewayEnvironment.read(parse_config({}), {}).state_url is None


def test_a_bad_state_url_in_the_environment_is_named_without_its_password() -> None:
    with pytest.raises(ConfigError) as error:
        GatewayEnvironment.read(parse_config({}), {"TOOLMESH_STATE_URL": "mysql://u:secret@db/0"})
    assert str(error.value).startswith("TOOLMESH_STATE_URL: 'db/0' is not a Redis URL")


def test_the_mcp_state_secret_is_read_checked_and_never_shown() -> None:
    config = parse_config({"mcp": {"state_secret_env": "MCP_STATE"}})
    secret = "x" * 40
    environment = GatewayEnvironment.read(config, {"MCP_STATE": secret})
    assert environment.mcp_state_secret == secret
    assert secret not in repr(environment)
    assert GatewayEnvironment.read(parse_config({}), {"MCP_STATE": secret}).mcp_state_secret is None
    with pytest.raises(ConfigError, match="mcp: environment variable MCP_STATE is not set"):
        GatewayEnvironment.read(config, {})
    with pytest.raises(ConfigError, match="at least 32 bytes"):
        GatewayEnvironment.read(config, {"MCP_STATE": "short"})
