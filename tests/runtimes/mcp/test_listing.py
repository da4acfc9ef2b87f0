"""The template's listing of a stdio MCP server (server_process.list_server): bounded in time,
and its causes said, so the gateway logs why a runtime serves nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import pod_env
from toolmesh.runtimes.mcp.server_process import ServerExited, list_server

QUIRKY = [sys.executable, "-m", "tests.fixtures.quirky_stdio_server"]


@pytest.fixture(autouse=True)
def _fixtures_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", pod_env()["PYTHONPATH"])


async def test_a_server_that_does_not_answer_in_time_is_named_and_stopped() -> None:
    started = time.monotonic()
    with pytest.raises(ServerExited) as slow:
        await list_server([*QUIRKY, "--slow", "60"], timeout=1)
    # Said in the template's own words (not the gateway's "did not load its modules within 60 s").
    assert "did not list its tools within 1 s" in str(slow.value) and "npx -y" in str(slow.value)
    assert time.monotonic() - started < 10


async def test_a_server_that_lists_slowly_within_the_time_is_listed() -> None:
    listing = await list_server([*QUIRKY, "--slow", "1"], timeout=20)
    assert "echo" in {tool["name"] for tool in listing.tools}


async def test_a_program_that_is_no_mcp_server_is_named() -> None:
    # `cat` echoes the handshake back: its own "request" is declined, and that answers ours.
    with pytest.raises(ServerExited) as echoed:
        await asyncio.wait_for(list_server(["cat"], timeout=10), 20)
    assert "'cat' did not list its tools: it answered an error" in str(echoed.value)


async def test_a_list_that_fails_leaves_it_out_and_the_tools_are_listed() -> None:
    listing = await list_server([*QUIRKY, "--lists"], timeout=20)
    assert "echo" in {tool["name"] for tool in listing.tools}
    assert [prompt["name"] for prompt in listing.prompts] == ["greet"]
    assert listing.resources == [] and listing.templates == []
    # Said once, for the list that failed; no templates method is a server's way to say "none".
    assert listing.unlisted == ["resources/list answered an error: connect ECONNREFUSED"]


async def test_what_a_wrapper_started_goes_when_the_listing_ends(tmp_path: Path) -> None:
    # `sh -c` (as `npx` does) starts the server as its child; the server ignores SIGTERM and the
    # end of its input, so only killing the wrapper's whole group ends it.
    marker = f"--marker={tmp_path.name}"
    wrapped = " ".join([*QUIRKY, "--deaf", marker])
    listing = await list_server(["sh", "-c", f"{wrapped}; echo wrapper-done >&2"], timeout=20)
    assert "echo" in {tool["name"] for tool in listing.tools}
    deadline = time.monotonic() + 5
    while left := _running(marker):
        if time.monotonic() > deadline:
            for pid in left:  # not to leave it behind for the next tests
                os.kill(pid, signal.SIGKILL)
            pytest.fail("the wrapped server outlived the listing")
        await asyncio.sleep(0.1)


def _running(marker: str) -> list[int]:
    """The pids of live processes (not zombies) whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            mine = marker.encode() in (entry / "cmdline").read_bytes()
            if mine and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found
