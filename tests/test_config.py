"""toolmesh.toml: the [mcp] and [chat] sections, where a file's paths resolve, and the configs
`toolmesh up` makes without one."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from toolmesh.config import EXAMPLE_MODULES, ConfigError, load_config, parse_config
from toolmesh.config.config_sources import CONFIG_FILE, find_config, modules_config, runtime_name
from toolmesh.directories import default_data_dir

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
    # The key itself is read at start-up: tests/gateway/test_environment.py.
    defaults = parse_config({})
    assert defaults.mcp.enabled and not defaults.chat.enabled
    # Without [state] everything stays in the gateway's process, as with one gateway.
    assert defaults.state.url is None and defaults.state.key_prefix == "toolmesh:"
    state = parse_config({"state": {"url": "rediss://:pw@redis.example:6380/1", "timeout": 0.2}}).state
    assert state.url == "rediss://:pw@redis.example:6380/1" and state.timeout == 0.2


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
        (
            '[[runtimes]]\nname = "t"\nmodules = ["m"]\nmax_memory_mb = 256',
            "runtimes.0.max_memory_mb: Input should be greater than or equal to 512",
        ),
        (
            '[[runtimes]]\nname = "t"\nmodules = ["m"]\nmax_result_bytes = 67108864',
            "runtimes.0.max_result_bytes: Input should be less than or equal to 66060288",
        ),
        (
            '[state]\nurl = "http://:secret@redis:6379"',
            "state.url: 'redis:6379' is not a Redis URL: it must start with redis://, rediss://, unix://",
        ),
        ('[state]\nurl = "redis://"', "state.url: 'redis://' is not a Redis URL"),
        ("[state]\ntimeout = 0", "state.timeout: Input should be greater than 0"),
        (
            '[oauth]\nissuer = "http://login.example.com"\naudience = "https://gw"',
            "oauth.issuer: issuer 'http://login.example.com' must use https://",
        ),
        ('[oauth]\nissuer = "login.example.com"\naudience = "x"', "is not an https:// URL"),
        (
            '[oauth]\nissuer = "https://login.example.com"',
            "[oauth] needs an `audience`, or a [gateway] public_url to default it to",
        ),
        (
            '[oauth]\nissuer = "https://i"\naudience = "https://gw"\nalgorithms = ["HS256"]',
            "oauth.algorithms: algorithms HS256 are not asymmetric ones",
        ),
        (
            '[oauth]\nissuer = "https://i"\naudience = "https://gw"\nscopes = { "a b" = ["*"] }',
            "scope names must be non-empty and hold no spaces",
        ),
        ('[gateway]\npublic_url = "gw.example.com"', "gateway.public_url: String should match pattern"),
        (
            '[[runtimes]]\nname = "t"\nmodules = ["m"]\nopenapi = "shop.json"',
            "`openapi` runs no pods: give it without `modules` or `address`",
        ),
        (
            '[[runtimes]]\nname = "t"\nmodules = ["m"]\nbase_url = "http://shop"',
            "`base_url`, `headers`, `include` and `exclude` go with `openapi`",
        ),
        (
            '[[runtimes]]\nname = "t"\nopenapi = "shop.json"\nbase_url = "shop.internal"',
            "base_url 'shop.internal' must be an http:// or https:// URL",
        ),
        (
            '[[runtimes]]\nname = "t"\nopenapi = "s.json"\nheaders = { A = { env = "T", prefx = "B " } }',
            "runtimes.0.headers.A",
        ),
        (
            '[[runtimes]]\nname = "t"\nmcp_url = "example.org/mcp"',
            "mcp_url 'example.org/mcp' must be an http",
        ),
        (
            '[[runtimes]]\nname = "t"\nmcp_url = "http://m/mcp"\nopenapi = "s.json"',
            "give one source of functions, not `openapi` and `mcp_url`",
        ),
        (
            '[[runtimes]]\nname = "t"\naddress = "h:1"\ngrpc_reflection = "h:2"',
            "`grpc_reflection` runs no pods: give it without `modules` or `address`",
        ),
        ('[[runtimes]]\nname = "t"\ngrpc_reflection = "http://h:1"', "must be a gRPC target"),
        (
            '[[runtimes]]\nname = "t"\nmcp_url = "http://m/mcp"\nbase_url = "http://m"',
            "`base_url` goes with `openapi`",
        ),
        (
            '[[runtimes]]\nname = "t"\nmcp_url = "http://m/mcp"\ninherit_env = ["HTTPS_PROXY"]',
            "`inherit_env` goes with `mcp_command`",
        ),
    ],
)
def test_mistakes_name_the_key(toml: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(tomllib.loads(toml), "toolmesh.toml")
    assert str(error.value).startswith("toolmesh.toml: ") and message in str(error.value)


def test_oauth_reads_its_scope_table_and_takes_http_issuers_only_on_loopback() -> None:
    toml = """
        [gateway]
        public_url = "https://tools.example.com"
        [oauth]
        issuer = "http://127.0.0.1:8081/realms/tools"
        scopes = { "tools.read" = ["list_*", "get_*"], "tools.admin" = ["*", "@admin"] }
    """
    config = parse_config(tomllib.loads(toml))
    assert config.oauth is not None and config.oauth.audience is None
    assert config.oauth.scopes == {"tools.read": ("list_*", "get_*"), "tools.admin": ("*", "@admin")}
    assert config.oauth.scope_claims == ("scope", "scp") and config.oauth.clock_skew == 30
    assert "RS256" in config.oauth.algorithms and "HS256" not in config.oauth.algorithms
    assert parse_config({}).oauth is None


def test_a_config_file_records_its_directory_and_paths_resolve_there(tmp_path: Path) -> None:
    (tmp_path / "toolmesh.toml").write_text(
        '[[runtimes]]\nname = "mine"\nmodules = ["my_tools"]\n\n'
        '[[runtimes]]\nname = "far"\naddress = "10.0.0.7:50061"\ncatalog = "far.json"\n\n'
        '[router]\nmodel = "models/m.onnx"\ntokenizer = "/abs/tokenizer.json"\ncache_dir = "cache"\n'
    )
    config = load_config(tmp_path / "toolmesh.toml")
    assert config.directory == tmp_path.resolve()
    # The keys keep what the file says; `resolve` finds them beside it.
    assert config.runtimes[0].modules == ("my_tools",) and config.runtimes[1].catalog == "far.json"
    assert config.resolve("far.json") == tmp_path.resolve() / "far.json"
    assert config.router.model == tmp_path.resolve() / "models/m.onnx"
    assert config.router.tokenizer == Path("/abs/tokenizer.json")
    assert config.router.cache_dir == tmp_path.resolve() / "cache"


def test_every_store_lives_in_the_projects_own_data_directory(tmp_path: Path) -> None:
    """Jobs, sessions and learned examples default to `.toolmesh/` beside the config, one
    project each; function embeddings (a cache keyed by model and text) stay user-wide."""
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "toolmesh.toml").write_text("")
    one, two = (load_config(tmp_path / name / "toolmesh.toml").settled() for name in ("one", "two"))
    assert one.project.data_dir == tmp_path.resolve() / "one" / ".toolmesh"
    assert one.jobs.path == tmp_path.resolve() / "one" / ".toolmesh" / "jobs.sqlite3"
    assert one.router.data_dir == one.project.data_dir
    assert one.project.id is not None and one.project.id.startswith("one-")
    assert two.project.id != one.project.id and two.project.data_dir != one.project.data_dir
    assert one.router.embeddings_dir == two.router.embeddings_dir == default_data_dir()
    assert one.settled() == one, "settling twice changes nothing"


def test_explicit_locations_win_and_resolve_beside_the_config(tmp_path: Path) -> None:
    (tmp_path / "toolmesh.toml").write_text(
        '[project]\nid = "shop"\ndata_dir = "var"\n\n[jobs]\npath = "state/jobs.sqlite3"\nworkers = 2\n\n'
        '[router]\ndata_dir = "router-data"\n'
    )
    config = load_config(tmp_path / "toolmesh.toml").settled()
    here = tmp_path.resolve()
    assert config.project.id == "shop" and config.project.data_dir == here / "var"
    assert config.jobs.path == here / "state/jobs.sqlite3" and config.jobs.workers == 2
    # An explicit router data_dir keeps its embeddings with it, as before.
    assert config.router.data_dir == config.router.embeddings_dir == here / "router-data"
    with pytest.raises(ConfigError, match=r"jobs\.lease: Input should be greater than or equal to 0\.5"):
        parse_config(tomllib.loads("[jobs]\nlease = 0.1\n"))
    with pytest.raises(ConfigError, match=r"project\.id: String should match pattern"):
        parse_config(tomllib.loads('[project]\nid = "a b"\n'))


def test_a_project_whose_directory_is_read_only_keeps_its_data_in_the_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    # A file where the data directory would go: its own directory cannot hold the data.
    (tmp_path / ".toolmesh").write_text("not a directory")
    config = modules_config(["my_tools"], tmp_path).settled()
    assert config.project.id is not None
    assert config.project.data_dir == tmp_path / "data" / "toolmesh" / "projects" / config.project.id


def test_the_function_state_file_moves_like_the_jobs_file_and_its_limits_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "toolmesh.toml").write_text('[function_state]\npath = "state/fs.sqlite3"\nmax_keys = 10\n')
    config = load_config(tmp_path / "toolmesh.toml")
    assert config.function_state.file() == tmp_path.resolve() / "state/fs.sqlite3"
    assert config.function_state.max_keys == 10
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    expected = tmp_path / "data" / "toolmesh" / "function_state.sqlite3"
    assert load_config(None).function_state.file() == expected
    with pytest.raises(ConfigError, match=r"function_state\.max_key_chars: Input should be greater than"):
        parse_config(tomllib.loads("[function_state]\nmax_key_chars = 0\n"))


SINGLETON = '[[runtimes]]\nname = "counter"\nmodules = ["counter"]\nsingleton = true\n'


def test_a_singleton_runtime_runs_exactly_one_pod_and_says_so_when_asked_for_more() -> None:
    runtime = parse_config(tomllib.loads(SINGLETON)).runtimes[0]
    assert (runtime.singleton, runtime.min_replicas, runtime.max_replicas) == (True, 1, 1)
    assert parse_config(tomllib.loads(SINGLETON + "max_replicas = 1\n")).runtimes[0].max_replicas == 1
    for extra, problem in (
        ("max_replicas = 3\n", "a singleton runtime runs exactly one pod: max_replicas must be 1 or unset"),
        ("min_replicas = 0\n", "a singleton runtime runs exactly one pod: min_replicas must be 1 or unset"),
        ('address = "10.0.0.7:50061"\n', "`singleton` goes with `modules`"),
    ):
        with pytest.raises(ConfigError, match=re.escape(problem)):
            parse_config(tomllib.loads(SINGLETON + extra), "toolmesh.toml")


def test_directory_is_not_a_key_of_the_file() -> None:
    with pytest.raises(ConfigError, match=r"toolmesh\.toml: directory: Extra inputs are not permitted"):
        parse_config({"directory": "/elsewhere"}, "toolmesh.toml")


def test_the_default_serves_the_examples_of_the_checkout() -> None:
    config = load_config(None)
    assert config.directory == ROOT and config.runtimes[0].modules == EXAMPLE_MODULES


def test_without_config_a_toolmesh_toml_in_the_current_directory_is_used(tmp_path: Path) -> None:
    assert find_config(None, cwd=tmp_path) is None
    assert find_config("other.toml", cwd=tmp_path) == Path("other.toml")
    (tmp_path / CONFIG_FILE).write_text("")
    assert find_config(None, cwd=tmp_path) == tmp_path / CONFIG_FILE
    assert find_config("other.toml", cwd=tmp_path) == Path("other.toml")


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("my_tools", "my-tools"),
        ("pkg.sub.Weather_API", "weather-api"),
        ("_private", "private"),
        ("__", "local"),
    ],
)
def test_a_modules_runtime_is_named_after_its_first_module(module: str, name: str) -> None:
    assert runtime_name(module) == name


def test_modules_become_one_runtime_found_in_the_given_directory(tmp_path: Path) -> None:
    config = modules_config(["my_tools", "more_tools"], tmp_path)
    (runtime,) = config.runtimes
    assert runtime.name == "my-tools" and runtime.modules == ("my_tools", "more_tools")
    assert config.directory == tmp_path.resolve()
    with pytest.raises(ConfigError, match="give at least one module"):
        modules_config([], tmp_path)
