"""The [mcp] and [chat] sections of toolmesh.toml."""

from __future__ import annotations

import tomllib

import pytest

from toolmesh.config import ConfigError, chat_api_key, parse_config

CHAT = """
[mcp]
allowed_origins = ["https://app.example.com"]
page_size = 20

[chat]
upstream_url = "https://api.example.com/v1"
api_key_env = "UPSTREAM_KEY"
models = ["gpt-4.1-mini"]
aliases = { fast = "gpt-4.1-mini" }
max_rounds = 3
"""


def test_the_sections_parse_into_typed_settings() -> None:
    config = parse_config(tomllib.loads(CHAT))
    assert config.mcp.allowed_origins == ("https://app.example.com",) and config.mcp.page_size == 20
    assert (
        config.chat.enabled
        and config.chat.max_rounds == 3
        and config.chat.aliases == {"fast": "gpt-4.1-mini"}
    )
    assert chat_api_key(config.chat, {"UPSTREAM_KEY": "sk-1"}) == "sk-1"
    with pytest.raises(ConfigError, match="chat: environment variable UPSTREAM_KEY is not set"):
        chat_api_key(config.chat, {})
    defaults = parse_config({})
    assert defaults.mcp.enabled and not defaults.chat.enabled


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[chat]\nupstream_url = "api.example.com"',
            "chat: upstream_url 'api.example.com' must start with http",
        ),
        (
            '[chat]\nmodels = ["a"]\naliases = { fast = "b" }',
            "chat: aliases fast name models that are not in `models`",
        ),
        ("[chat]\nmax_rounds = 0", "chat.max_rounds: Input should be greater than or equal to 1"),
        ("[mcp]\npage_size = 0", "mcp.page_size: Input should be greater than or equal to 1"),
        ('[mcp]\norigins = ["x"]', "mcp.origins: Extra inputs are not permitted"),
    ],
)
def test_mistakes_name_the_key(toml: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(tomllib.loads(toml), "toolmesh.toml")
    assert str(error.value).startswith("toolmesh.toml: ") and message in str(error.value)
