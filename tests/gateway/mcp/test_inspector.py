"""End to end: the MCP Inspector CLI (npm `@modelcontextprotocol/inspector`) against a real gateway.

`.ci/run` installs it into `.ci/node_modules`; elsewhere the tests skip unless
TOOLMESH_REQUIRE_E2E=1, when a missing Inspector fails them. Set
TOOLMESH_MCP_INSPECTOR to use another `mcp-inspector` binary.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import missing
from tests.gateway.conftest import StartGateway, runtime

ROOT = Path(__file__).resolve().parents[3]


def inspector() -> str:
    found = (
        os.environ.get("TOOLMESH_MCP_INSPECTOR")
        or shutil.which("mcp-inspector", path=str(ROOT / ".ci" / "node_modules" / ".bin"))
        or shutil.which("mcp-inspector")
    )
    if found:
        return found
    missing("the MCP Inspector is not installed (npm ci --prefix .ci, as .ci/run does)")


async def run_cli(url: str, *args: str) -> Any:
    """Run the Inspector in CLI mode (it exits after one method) and decode what it printed."""
    process = await asyncio.create_subprocess_exec(
        inspector(),
        "--cli",
        url,
        "--transport",
        "http",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, f"mcp-inspector failed ({process.returncode}): {err.decode()}"
    return json.loads(out)


async def test_the_inspector_lists_and_calls_tools(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "sample_tools", "mcp_tools"))
    url = f"{gateway.url}/mcp"
    listing = await run_cli(url, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert len(tools) == len(gateway.mesh.catalog)
    assert tools["forecast"]["annotations"]["readOnlyHint"] is True
    assert tools["forecast"]["outputSchema"]["type"] == "object"
    echoed = await run_cli(url, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hello")
    assert echoed == {"content": [{"type": "text", "text": "hello"}], "isError": False}
    forecast = await run_cli(
        url, "--method", "tools/call", "--tool-name", "forecast", "--tool-arg", "city=Oslo"
    )
    assert forecast["structuredContent"] == {"city": "Oslo", "highs": [20.0, 21.0]}
    failed = await run_cli(url, "--method", "tools/call", "--tool-name", "fail", "--tool-arg", "message=boom")
    assert failed["isError"] is True and "boom" in failed["content"][0]["text"]
