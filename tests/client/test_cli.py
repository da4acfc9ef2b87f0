"""`toolmesh invoke`, `toolmesh tools` and `toolmesh functions --url`, run as real
processes against a real gateway (which needs the key "cli-secret")."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.conftest import pod_env
from tests.gateway.conftest import runtime
from toolmesh.config import GatewayConfig, KeyConfig, MeshConfig, hash_key
from toolmesh.gateway.server import Gateway, start_gateway

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "cli-secret"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway() -> AsyncIterator[Gateway]:
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0),
        runtimes=(runtime(),),
        keys=(KeyConfig(name="cli", key_hash=hash_key(KEY)),),
    )
    started = await start_gateway(config, environ={})
    yield started
    await started.stop(grace=0)


async def toolmesh(*args: str, api_key: str | None = KEY) -> subprocess.CompletedProcess[str]:
    """Run the command with `api_key` in TOOLMESH_API_KEY, in a thread so the gateway keeps serving."""
    env = {name: value for name, value in pod_env().items() if name != "TOOLMESH_API_KEY"}
    if api_key is not None:
        env["TOOLMESH_API_KEY"] = api_key
    command = [sys.executable, "-m", "toolmesh", *args]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, env=env, timeout=60
    )


async def test_invoke_prints_the_result(gateway: Gateway) -> None:
    done = await toolmesh("invoke", "add", "--args", '{"a": 2, "b": 40}', "--url", gateway.url)
    assert (done.returncode, done.stderr) == (0, "")
    result = json.loads(done.stdout)
    assert result["structured"] == 42 and result["content"] == [{"type": "json", "json": 42}]
    echoed = await toolmesh("invoke", "echo", "--args", '{"text": "héllo"}', "--url", gateway.url)
    assert json.loads(echoed.stdout)["content"] == [{"type": "text", "text": "héllo"}]


async def test_invoke_exits_1_when_the_function_failed(gateway: Gateway) -> None:
    done = await toolmesh("invoke", "fail", "--args", '{"message": "disk full"}', "--url", gateway.url)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["is_error"] is True and result["error"]["code"] == "function_error"


async def test_invoke_exits_2_with_one_line_when_the_call_is_refused(gateway: Gateway) -> None:
    unknown = await toolmesh("invoke", "ad", "--url", gateway.url)
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert (
        unknown.stderr
        == "toolmesh invoke: no function named 'ad'; did you mean 'add'? (function_not_found)\n"
    )
    invalid = await toolmesh("invoke", "add", "--args", '{"a": "x", "z": 1}', "--url", gateway.url)
    assert invalid.returncode == 2
    first, *violations = invalid.stderr.splitlines()
    assert first.startswith("toolmesh invoke: invalid arguments: ") and first.endswith("(invalid_arguments)")
    assert violations == ['  - a: expected integer, got string "x"', "  - z: unexpected argument"]


async def test_invoke_checks_its_arguments_before_calling(gateway: Gateway) -> None:
    malformed = await toolmesh("invoke", "add", "--args", "{a: 1}", "--url", gateway.url)
    assert malformed.returncode == 2 and "--args is not valid JSON" in malformed.stderr
    not_object = await toolmesh("invoke", "add", "--args", "[1, 2]", "--url", gateway.url)
    assert not_object.returncode == 2 and "--args must be a JSON object" in not_object.stderr


async def test_the_api_key_comes_from_the_flag_or_the_environment(gateway: Gateway) -> None:
    missing = await toolmesh("tools", "--url", gateway.url, api_key=None)
    assert missing.returncode == 2 and "(unauthenticated)" in missing.stderr
    flag = await toolmesh("tools", "--url", gateway.url, "--api-key", KEY, api_key=None)
    assert flag.returncode == 0
    flag_wins = await toolmesh("tools", "--url", gateway.url, "--api-key", "wrong")
    assert flag_wins.returncode == 2 and "unknown API key" in flag_wins.stderr


async def test_tools_prints_definitions_in_each_format(gateway: Gateway) -> None:
    chat = json.loads((await toolmesh("tools", "--url", gateway.url)).stdout)
    assert "counter__increment" in {tool["function"]["name"] for tool in chat}
    strict = json.loads((await toolmesh("tools", "--strict", "--url", gateway.url)).stdout)
    add = next(tool["function"] for tool in strict if tool["function"]["name"] == "add")
    assert add["strict"] is True
    cloudflare = json.loads((await toolmesh("tools", "--format", "cloudflare", "--url", gateway.url)).stdout)
    assert all(set(tool) == {"name", "description", "parameters"} for tool in cloudflare)
    mcp = json.loads((await toolmesh("tools", "--format", "mcp", "--url", gateway.url)).stdout)
    assert all("inputSchema" in tool for tool in mcp)


@pytest.mark.parametrize("fmt", ["json", "openai", "text"])
async def test_functions_from_a_gateway_match_functions_from_the_module(gateway: Gateway, fmt: str) -> None:
    remote = await toolmesh("functions", "--url", gateway.url, "--format", fmt)
    local = await toolmesh("functions", "--module", "sample_tools", "--format", fmt)
    assert remote.returncode == local.returncode == 0
    assert remote.stdout == local.stdout
    assert "counter" in remote.stdout


async def test_functions_takes_exactly_one_of_module_url_and_config(gateway: Gateway) -> None:
    both = await toolmesh("functions", "--module", "sample_tools", "--url", gateway.url)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    neither = await toolmesh("functions")
    assert (
        neither.returncode == 2
        and "one of the arguments --module/-m --url --config is required" in neither.stderr
    )


async def test_an_unreachable_gateway_exits_2() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = await toolmesh("invoke", "add", "--url", f"http://127.0.0.1:{port}")
    assert done.returncode == 2
    assert (
        done.stderr.startswith("toolmesh invoke: cannot reach the gateway") and "(unavailable)" in done.stderr
    )
