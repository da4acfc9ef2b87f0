"""Reloads through standby templates (gateway/pool/launcher.py), as `toolmesh up --reload` runs
them: the standby becomes the new template, a new import in the edited module works, a module
that fails to import keeps the old version, and reloads leave no process behind."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest

from tests.gateway.reload.conftest import Served, serve_module
from tests.gateway.reload.test_hot_reload import answer, until_version

NO_ROUTER = "[router]\nenabled = false\n"
#: Added to the module's imports by an edit: whether `colorsys` was imported before the module was.
NEW_IMPORT = 'import sys\n\nFRESH = "colorsys" not in sys.modules\n\nimport colorsys\n'
HUE = '''

def hue(red: float, green: float, blue: float) -> str:
    """The hue of a colour, and whether colorsys was new to the template's interpreter."""
    return f"{colorsys.rgb_to_hsv(red, green, blue)[0]:.3f} {FRESH}"
'''


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # it ended meanwhile
            # Fields after the command name, which is in parentheses and may hold spaces.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def tree(pid: int) -> dict[int, set[int]]:
    """`pid`'s children (templates and standbys), each with its own children (pods)."""
    return {child: children(child) for child in children(pid)}


async def settled(gateway: Served, within: float = 30.0) -> dict[int, set[int]]:
    """The gateway's process tree once it is one template with one pod and one standby with
    none; the test fails if it does not get there (old templates and pods left running)."""
    deadline = time.monotonic() + within
    while True:
        now = tree(gateway.process.pid)
        if sorted(len(pods) for pods in now.values()) == [0, 1]:
            return now
        assert time.monotonic() < deadline, f"processes left behind: {now}"
        await asyncio.sleep(0.1)


def pids(processes: dict[int, set[int]]) -> set[int]:
    return set(processes).union(*processes.values())


def running(processes: set[int]) -> set[int]:
    """Those of `processes` that still run (a zombie has ended)."""
    alive = set()
    for pid in processes:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def reloaded_pids(log: str) -> list[int]:
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line["pid"] for line in lines if line["msg"] == "runtime reloaded"]


@pytest.mark.slow
async def test_reloads_run_on_standbys_and_leave_no_process_behind(
    tmp_path: Path, served: list[Served]
) -> None:
    gateway = serve_module(tmp_path, "--reload", config=NO_ROUTER)
    served.append(gateway)
    standbys = []
    seen: set[int] = set()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        assert await answer(http, "version") == "v1"
        for n in range(2, 6):
            processes = await settled(gateway)
            seen |= pids(processes)
            [standby] = [pid for pid, pods in processes.items() if not pods]
            standbys.append(standby)
            if n == 3:
                # A module the template's interpreter never imported, as a new dependency would be.
                gateway.edit("import time\n", "import time\n" + NEW_IMPORT)
                gateway.module.write_text(gateway.module.read_text() + HUE)
            gateway.edit(f'VERSION = "v{n - 1}"', f'VERSION = "v{n}"')
            await until_version(http, f"v{n}")
        assert await answer(http, "hue", {"red": 0.0, "green": 1.0, "blue": 0.0}) == "0.333 True"
        seen |= pids(await settled(gateway))
    log = gateway.stop()
    # Each reload's new template was the standby waiting before the edit.
    assert reloaded_pids(log) == standbys
    assert len(seen) == 3 + 4 * 2 and not running(seen), "the gateway left a process behind"


@pytest.mark.slow
async def test_a_module_that_fails_to_import_keeps_the_old_version(
    tmp_path: Path, served: list[Served]
) -> None:
    gateway = serve_module(tmp_path, "--reload", config=NO_ROUTER)
    served.append(gateway)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        seen = pids(await settled(gateway))
        # It imports a module that does not exist: the standby fails to load it, and exits.
        gateway.edit("import time\n", "import time\nimport no_such_module_anywhere\n")
        gateway.edit('VERSION = "v1"', 'VERSION = "v2"')
        await asyncio.sleep(1.0)  # the watcher's reload, which fails
        report = (await http.post("/v1/admin/reload", json={"runtime": "tools"})).json()
        [outcome] = report["runtimes"]
        assert outcome["status"] == "failed" and "no_such_module_anywhere" in outcome["traceback"]
        assert await answer(http, "version") == "v1"
        # The next save that imports is served, from a new standby.
        gateway.edit("import no_such_module_anywhere\n", "")
        await until_version(http, "v2")
        seen |= pids(await settled(gateway))
    log = gateway.stop()
    assert "ModuleNotFoundError" in log
    assert not running(seen), "the gateway left a process behind"
