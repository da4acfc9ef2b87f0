"""What real stdio MCP servers do to a client, through a gateway (tests/fixtures/quirky_stdio_server.py):
a banner and logs on stdout, notifications and a roots request before `initialized`, schemas in
every dialect and shape, names no function may have, one tool that cannot be hosted, megabytes."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import pod_env
from tests.gateway.conftest import StartGateway
from toolmesh.config import RuntimeConfig

SERVER = (sys.executable, "-m", "tests.fixtures.quirky_stdio_server")


def quirky(*flags: str, **settings: Any) -> RuntimeConfig:
    env = {"PYTHONPATH": pod_env()["PYTHONPATH"]}
    return RuntimeConfig(name="q", mcp_command=(*SERVER, *flags), env=env, **settings)


async def _invoke(http: httpx.AsyncClient, name: str, arguments: dict[str, Any]) -> httpx.Response:
    return await http.post(f"/v1/functions/q.{name}/invoke", json=arguments)


async def test_a_tool_that_cannot_be_hosted_is_named_and_left_out_and_the_others_serve(
    gateway_factory: StartGateway, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway = await gateway_factory(quirky())
    logged = capfd.readouterr().err
    # One bad schema, one tool that must run as a task: each named with its cause, the rest served.
    assert "tool 'broken_schema' is not served" in logged and "'integr'" in logged, logged
    assert "tool 'needs_a_task' is not served" in logged and "taskSupport 'required'" in logged
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        listed = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
        assert {"q.echo", "q.draft7_refs", "q.no_type", "q.big"} <= listed, sorted(listed)
        assert not {"q.broken_schema", "q.needs_a_task"} & listed
        assert (await http.get("/readyz")).json()["runtimes"] == {"q": True}
        echoed = (await _invoke(http, "echo", {"message": "hi"})).json()
        assert echoed["is_error"] is False and '"message": "hi"' in echoed["content"][0]["text"]


async def test_names_become_function_names_each_its_own(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(quirky())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        listed = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
        # Dots, slashes and dashes are separators; accents go; a clash and a name too long get a hash.
        assert {"q.draft7_refs", "q.any_of_null", "q.meteo"} <= listed, sorted(listed)
        hashed = sorted(name for name in listed if name.startswith(("q.meteo_", "q.aaaa")))
        assert len(hashed) == 3 and all(len(name) - 2 + len("q__") <= 64 for name in hashed), hashed
        # Each calls its own tool (the server's name, as it wrote it).
        called = {name: (await _invoke(http, name[2:], {})).json()["content"][0]["text"] for name in hashed}
        assert len(set(called.values())) == 3
        accented = (await _invoke(http, "meteo", {})).json()["content"][0]["text"]
        assert "météo☀" in accented


async def test_schemas_real_servers_declare_are_checked_as_they_say(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(quirky())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        # draft-07 `definitions` with a `$ref`, a list of types, no extra properties.
        assert (await _invoke(http, "draft7_refs", {"at": {"x": 1}, "tags": None})).status_code == 200
        wrong = await _invoke(http, "draft7_refs", {"at": {"x": "one"}})
        assert wrong.status_code == 422 and "at.x" in wrong.text
        assert (await _invoke(http, "draft7_refs", {"at": {"x": 1}, "zzz": 1})).status_code == 422
        # `anyOf` with null, an `additionalProperties` schema.
        assert (await _invoke(http, "any_of_null", {"when": None, "extra": {"a": 1}})).status_code == 200
        assert (await _invoke(http, "any_of_null", {"extra": {"a": "x"}})).status_code == 422
        # No `type` at the top: the arguments are an object all the same.
        assert (await _invoke(http, "no_type", {"n": 1})).status_code == 200
        assert (await _invoke(http, "no_type", {"n": "one"})).status_code == 422
        assert (await _invoke(http, "empty", {})).status_code == 200


async def test_results_errors_links_audio_and_megabytes(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(quirky())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        failed = (await _invoke(http, "oops", {})).json()
        assert failed["is_error"] is True and "it went wrong" in failed["error"]["message"]
        linked = (await _invoke(http, "link", {})).json()
        kinds = [item["type"] for item in linked["content"]]
        # A resource link is one (not text holding its JSON), and the result's `_meta` passes.
        assert kinds == ["resource_link", "binary"] and linked["content"][0]["uri"] == "file:///tmp/a.txt"
        assert linked["meta"] == {"quirky/trace": "t1"}
        assert linked["content"][1]["mime_type"] == "audio/wav"
        big = (await _invoke(http, "big", {"megabytes": 3})).json()
        assert len(big["content"][0]["text"]) == 3 * 1024 * 1024
        # An image beside structured content stays an image (not base64 in the structure's JSON).
        picture = (await _invoke(http, "picture", {})).json()
        assert picture["structured"] == {"size": 8}
        assert [(item["type"], item["mime_type"]) for item in picture["content"]] == [("binary", "image/png")]
    async with (
        httpx2.AsyncClient(timeout=30) as mcp_http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=mcp_http)) as client,
    ):
        shown = await client.call_tool("q__picture", {})
    assert [item.type for item in shown.content] == ["image"] and shown.structured_content == {"size": 8}


async def test_a_server_that_ignores_sigterm_and_its_input_ending_goes_with_its_pod(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(quirky("--deaf", idle_timeout=1))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        assert (await _invoke(http, "echo", {"message": "x"})).status_code == 200
    servers = _deaf_servers()
    assert servers, "no server is running"
    deadline = asyncio.get_running_loop().time() + 20
    while _deaf_servers() & servers:
        assert asyncio.get_running_loop().time() < deadline, "the server outlived its idle pod"
        await asyncio.sleep(0.2)


def _deaf_servers() -> set[int]:
    """The pids of running `quirky_stdio_server --deaf` processes (zombies are gone)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline, open(f"/proc/{entry}/stat") as stat:
                if b"quirky_stdio_server\0--deaf" in cmdline.read() and ") Z" not in stat.read():
                    found.add(int(entry))
        except OSError:
            continue
    return found


async def test_a_list_the_server_cannot_give_leaves_its_tools_served(
    gateway_factory: StartGateway, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway = await gateway_factory(quirky("--lists"))
    assert "resources/list answered an error: connect ECONNREFUSED" in capfd.readouterr().err
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        assert (await http.get("/readyz")).json()["runtimes"] == {"q": True}
        assert (await _invoke(http, "echo", {"message": "x"})).status_code == 200
