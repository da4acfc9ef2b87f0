"""`toolmesh functions --config FILE`: every runtime's functions, read without serving; a broken
source names itself and its cause, and the others still list."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, pod_env
from tests.gateway.sources.mcp_servers import ServerProcess, free_port, python_server

SERVER = f'["{sys.executable}", "-m", "tests.fixtures.stdio_mcp_server"]'


@pytest.fixture(scope="module")
def remote() -> Iterator[ServerProcess]:
    server = python_server().start()
    yield server
    server.kill()


def functions(
    config: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolmesh", "functions", "--config", str(config), *options]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=ROOT, env={**pod_env(), **(env or {})}
    )


def test_each_runtime_lists_and_the_broken_ones_name_their_cause(
    tmp_path: Path, remote: ServerProcess
) -> None:
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"swagger": "2.0", "paths": {}}))
    nowhere = f"127.0.0.1:{free_port()}"
    config = tmp_path / "toolmesh.toml"
    config.write_text(
        f"""
[[runtimes]]
name = "tools"
modules = ["sample_tools"]

[[runtimes]]
name = "clock"
mcp_url = "{remote.url}"
include = ["add", "fail"]

[[runtimes]]
name = "stdio"
mcp_command = {SERVER}

[[runtimes]]
name = "invalid"
openapi = "invalid.json"
base_url = "http://127.0.0.1:9"

[[runtimes]]
name = "gone"
mcp_url = "http://{nowhere}/mcp"
startup_timeout = 2

[[runtimes]]
name = "grpc-gone"
grpc_reflection = "{nowhere}"
startup_timeout = 1

[[runtimes]]
name = "exits"
mcp_command = ["{sys.executable}", "-c", "raise SystemExit(3)"]

[[runtimes]]
name = "secret"
mcp_url = "{remote.url}"
headers = {{ Authorization = {{ env = "NO_SUCH_TOKEN_VAR" }} }}
"""
    )
    done = functions(config)
    assert done.returncode == 1, done.stderr
    listed = {r["name"]: r for r in json.loads(done.stdout)["runtimes"]}
    assert list(listed) == ["tools", "clock", "stdio", "invalid", "gone", "grpc-gone", "exits", "secret"]
    names = {name: {f["name"] for f in r["functions"] if "feature" not in f} for name, r in listed.items()}
    # The JSON keeps resources and prompts too (`include` is for tools).
    features = {f["name"]: f["feature"]["kind"] for f in listed["clock"]["functions"] if "feature" in f}
    assert features == {
        "clock.zones": "resource",
        "clock.offset": "resource",
        "clock.ask_time": "prompt",
        # The server completes: one function per argument of its prompt and template.
        "clock.complete_clock_ask_time_zone": "completion",
        "clock.complete_clock_ask_time_polite": "completion",
        "clock.complete_clock_zones_zone_offset_zone": "completion",
    }
    assert "add" in names["tools"]
    assert names["clock"] == {"clock.add", "clock.fail"}
    assert {"stdio.add", "stdio.convert_time"} <= names["stdio"]
    assert listed["clock"]["kind"] == "mcp_url" and "error" not in listed["clock"]
    errors = {name: r.get("error", "") for name, r in listed.items()}
    assert errors["invalid"].startswith(
        "runtime 'invalid': OpenAPI document invalid.json: a Swagger 2.0 document"
    )
    assert errors["gone"].startswith(f"runtime 'gone': MCP server http://{nowhere}/mcp: ")
    # With the last cause gRPC gave ("... Connection refused").
    assert errors["grpc-gone"].startswith(
        f"runtime 'grpc-gone': gRPC server {nowhere}: not reachable within 1 s ("
    )
    assert errors["exits"].startswith("runtimes.exits: cannot read its modules")
    assert (
        errors["secret"]
        == "runtimes.secret: header Authorization: environment variable NO_SUCH_TOKEN_VAR is not set"
    )
    for name in ("invalid", "gone", "grpc-gone", "exits", "secret"):
        assert errors[name] in done.stderr
        assert names[name] == set()
    text = functions(config, "--format", "text")
    assert "# runtime clock (mcp_url): 2 functions" in text.stdout
    assert "# runtime gone (mcp_url): error: runtime 'gone'" in text.stdout


def test_a_config_whose_runtimes_all_list_exits_0(tmp_path: Path, remote: ServerProcess) -> None:
    config = tmp_path / "toolmesh.toml"
    config.write_text(
        f'[[runtimes]]\nname = "clock"\nmcp_url = "{remote.url}"\nexclude = ["crash", "greet*", "where"]\n'
    )
    done = functions(config, "--format", "openai")
    assert done.returncode == 0, done.stderr
    assert {tool["function"]["name"] for tool in json.loads(done.stdout)} == {
        "clock__add",
        "clock__convert_time",
        "clock__fail",
        "clock__whoami",
        "clock__nap",
        "clock__count",
    }
