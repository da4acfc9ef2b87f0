"""A remote MCP server as a runtime (`mcp_url`) against calling it with the official client (#29).

The server is tests/fixtures/http_mcp_server.py (the SDK's MCPServer over Streamable HTTP on
uvicorn, answering JSON bodies) in its own process; its `add` tool is called sequentially (one in
flight, warm connections), in interleaved rounds:

  official client     the SDK's `Client.call_tool` over `streamable_http_client`: the baseline
  RemoteMcpRuntime    the gateway's remote MCP source calling it (what the pool runs for a call)
  via gateway         `POST /v1/functions/clock.add/invoke` on `toolmesh up` (its own process)
  gateway noop        a Python no-op function on that gateway (one warm pod): the gateway's hop alone

    .venv/bin/python bench/mcp_remote_call.py [--calls 1000] [--rounds 3] [--era modern|handshake]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.openapi_call import free_port, process, timed, wait_for  # noqa: E402
from toolmesh.config import RuntimeConfig  # noqa: E402
from toolmesh.gateway.sources.remote_mcp import RemoteMcpRuntime  # noqa: E402
from toolmesh.protocol.calls import Call  # noqa: E402


async def measure(server: str, gateway: str, calls: int, rounds: int) -> dict[str, list[float]]:
    runtime = RemoteMcpRuntime(RuntimeConfig(name="clock", mcp_url=server), {})
    await runtime.start()
    arguments = json.dumps({"a": 2, "b": 40}).encode()
    results: dict[str, list[float]] = {}
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(server, http_client=http)) as official,
        httpx.AsyncClient(base_url=gateway, timeout=30) as client,
    ):

        async def call_official() -> None:
            answer = await official.call_tool("add", {"a": 2, "b": 40})
            assert answer.structured_content is not None and answer.structured_content["total"] == 42

        async def call_runtime() -> None:
            result = await runtime.invoke(Call("clock.add", arguments), 10)
            assert result.structured["total"] == 42, result

        async def call_gateway() -> None:
            answer = (await client.post("/v1/functions/clock.add/invoke", content=arguments)).json()
            assert answer["structured"]["total"] == 42, answer

        async def call_noop() -> None:
            answer = (await client.post("/v1/functions/noop/invoke", content=b"{}")).json()
            assert answer["is_error"] is False, answer

        targets = {
            "official client": call_official,
            "RemoteMcpRuntime": call_runtime,
            "via gateway": call_gateway,
            "gateway noop": call_noop,
        }
        for _ in range(rounds):
            for name, call in targets.items():
                results.setdefault(name, []).extend(await timed(call, calls))
    await runtime.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="calls per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--era", choices=["modern", "handshake"], default="modern")
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory(prefix="tm-bench-") as tmp:
        work = Path(tmp)
        server_port, http_port = free_port(), free_port()
        server = f"http://127.0.0.1:{server_port}/mcp"
        config = work / "toolmesh.toml"
        config.write_text(
            f"[gateway]\nhttp_port = {http_port}\ngrpc_port = 0\naccess_log = false\n"
            '[[runtimes]]\nname = "noop"\nmodules = ["bench.noop_tools"]\nmin_replicas = 1\n'
            'log_level = "warning"\n'
            f'[[runtimes]]\nname = "clock"\nmcp_url = "{server}"\n'
        )
        flags = ["--json", *(["--legacy"] if args.era == "handshake" else [])]
        command = [sys.executable, "-m", "tests.fixtures.http_mcp_server", str(server_port), *flags]
        gateway_env = {**env, "TMPDIR": tmp, "XDG_DATA_HOME": str(work / "data")}
        with process(command, env):
            wait_for(f"http://127.0.0.1:{server_port}/")
            with process(
                [sys.executable, "-m", "toolmesh", "up", "--config", str(config)], gateway_env
            ) as up:
                assert up.stdout is not None
                up.stdout.readline()  # the ready line
                results = asyncio.run(
                    measure(server, f"http://127.0.0.1:{http_port}", args.calls, args.rounds)
                )
    base = statistics.median(results["official client"])
    print(f"{args.era} era, {args.rounds} rounds x {args.calls} sequential calls per target")
    print("| target | p50 µs | p99 µs | p50 vs official client |\n|---|---|---|---|")
    for name, samples in results.items():
        samples.sort()
        p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99)]
        print(f"| {name} | {p50:.0f} | {p99:.0f} | {p50 / base:.2f}x |")


if __name__ == "__main__":
    main()
