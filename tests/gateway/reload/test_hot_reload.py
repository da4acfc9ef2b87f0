"""Hot reload as a user runs it: `toolmesh up --reload`, SIGHUP and the admin endpoint, against
real template processes and pods, while callers keep calling."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.subscriptions import ToolsListChanged

from tests.conftest import user_dirs
from tests.gateway.mcp.test_endpoint import connect
from tests.gateway.reload.conftest import NEW_FUNCTION, Served, serve_module

CALLERS = 8


async def answer(http: httpx.AsyncClient, function: str, arguments: dict[str, object] | None = None) -> Any:
    response = await http.post(f"/v1/functions/{function}/invoke", json=arguments or {})
    assert response.status_code == 200, response.text
    result = response.json()
    assert not result["is_error"], result
    structured = result["structured"]
    if structured is None:
        return result["content"][0]["text"]
    return structured["result"] if isinstance(structured, dict) else structured


async def until_version(http: httpx.AsyncClient, version: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while await answer(http, "version") != version:
        assert time.monotonic() < deadline, f"{version} never answered"
        await asyncio.sleep(0.05)


class Load:
    """`CALLERS` clients calling in a loop, counting what answered and every failure."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.versions: Counter[object] = Counter()
        self.failures: list[str] = []
        self._running = True
        self._tasks: list[asyncio.Task[None]] = []

    async def _caller(self, index: int) -> None:
        while self._running:
            # Every other caller holds its pod for a while: in flight as the old pods drain.
            function, arguments = ("pause", {"seconds": 0.2}) if index % 2 else ("version", {})
            try:
                self.versions[await answer(self.http, function, arguments)] += 1
            except (AssertionError, httpx.HTTPError) as exc:
                self.failures.append(repr(exc))

    def __enter__(self) -> Load:
        self._tasks = [asyncio.create_task(self._caller(i)) for i in range(CALLERS)]
        return self

    async def stop(self) -> None:
        self._running = False
        await asyncio.gather(*self._tasks)

    def __exit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()


@pytest.mark.slow
async def test_an_edit_reloads_the_runtime_with_no_failed_call(
    tmp_path: Path, router_cache: Path, served: list[Served]
) -> None:
    gateway = serve_module(tmp_path, "--reload", env=user_dirs(tmp_path, router_cache))
    served.append(gateway)
    limits = httpx.Limits(max_connections=CALLERS + 4)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30, limits=limits) as http:
        assert await answer(http, "version") == "v1"
        async with connect(f"{gateway.url}/mcp") as mcp, mcp.listen(tools_list_changed=True) as changes:
            with Load(http) as load:
                await asyncio.sleep(0.5)
                gateway.edit('VERSION = "v1"', 'VERSION = "v2"')
                gateway.edit("    return VERSION\n", "    return VERSION\n" + NEW_FUNCTION)
                await until_version(http, "v2")
                await asyncio.sleep(0.5)  # the old pods' calls in flight finish
                await load.stop()
            with anyio.fail_after(15):
                assert isinstance(await anext(aiter(changes)), ToolsListChanged)
        assert load.failures == []
        assert load.versions["v1"] > 0 and load.versions["v2"] > 0
        assert await answer(http, "celsius_to_fahrenheit", {"celsius": 100}) == 212
        names = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
        assert names == {"version", "pause", "celsius_to_fahrenheit"}
        routed = await http.post("/v1/route", json={"prompt": "what is 30 degrees celsius in fahrenheit?"})
        assert routed.json()["match"] == "celsius_to_fahrenheit"

        # A save that does not import: the old version keeps answering, the error is reported.
        with Load(http) as load:
            gateway.edit("def version()", "def version(:")
            await asyncio.sleep(1.0)  # the watcher's reload, which fails
            report = (await http.post("/v1/admin/reload", json={"runtime": "tools"})).json()
            await load.stop()
        assert load.failures == [] and set(load.versions) == {"v2"}
        assert report["ok"] is False
        [outcome] = report["runtimes"]
        assert outcome["status"] == "failed" and "SyntaxError" in outcome["error"]
        assert "live_tools.py" in outcome["traceback"]
        assert await answer(http, "version") == "v2"
    logs = [json.loads(line) for line in gateway.stop().splitlines() if line.startswith("{")]
    errors = [line["msg"] for line in logs if line["level"] == "error"]
    assert any("SyntaxError" in msg and "Traceback" in msg and "'tools'" in msg for msg in errors), errors


@pytest.mark.slow
async def test_sighup_reloads_every_runtime(tmp_path: Path, served: list[Served]) -> None:
    gateway = serve_module(tmp_path, config="[router]\nenabled = false\n")
    served.append(gateway)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        gateway.edit('VERSION = "v1"', 'VERSION = "v2"')
        await asyncio.sleep(0.5)
        assert await answer(http, "version") == "v1", "without --reload an edit alone changes nothing"
        with Load(http) as load:
            gateway.process.send_signal(signal.SIGHUP)
            await until_version(http, "v2")
            await load.stop()
        assert load.failures == []
    gateway.stop()
