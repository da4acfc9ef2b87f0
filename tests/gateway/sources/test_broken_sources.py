"""`toolmesh up` with sources that cannot serve (an invalid OpenAPI document, MCP and gRPC servers
not there, a stdio server that exits at once): each is named with its cause, the others serve."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from tests.gateway.conftest import StartUp
from tests.gateway.sources.mcp_servers import free_port


def test_one_broken_source_does_not_stop_the_others(up: StartUp, tmp_path: Path) -> None:
    (tmp_path / "invalid.json").write_text('{"swagger": "2.0", "paths": {}}')
    nowhere = f"127.0.0.1:{free_port()}"
    running = up(
        runtimes=f"""
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
"""
    )
    url = f"http://127.0.0.1:{running.http_port}"
    ready = httpx.get(f"{url}/readyz", timeout=10).json()["runtimes"]
    assert ready == {"tools": True, "invalid": False, "gone": False, "grpc-gone": False, "exits": False}
    added = httpx.post(f"{url}/v1/functions/add/invoke", json={"a": 2, "b": 3}, timeout=10)
    assert added.json()["structured"] == 5
    names = {f["name"] for f in httpx.get(f"{url}/v1/functions", timeout=10).json()["functions"]}
    assert not any(name.startswith(("invalid.", "gone.", "grpc-gone.", "exits.")) for name in names)
    running.process.terminate()
    _, err = running.process.communicate(timeout=30)
    assert "runtime 'invalid': OpenAPI document invalid.json: a Swagger 2.0 document" in err
    assert f"runtime 'gone': MCP server http://{nowhere}/mcp" in err
    assert f"runtime 'grpc-gone': gRPC server {nowhere}: not reachable within 1 s" in err
    assert "runtime 'exits' failed to load its modules" in err
    assert f"the MCP server '{sys.executable} -c raise SystemExit(3)' did not list its tools" in err
