"""A remote MCP server over the deprecated HTTP+SSE transport against the same server over
Streamable HTTP (#29): what the gateway's remote MCP source pays per call on each.

The servers are tests/fixtures/http_mcp_server.py (the SDK's MCPServer on uvicorn), one process
each: `--legacy` (Streamable HTTP, handshake era: answers as event streams or, with `--json`, JSON
bodies) and `--sse` (the HTTP+SSE app). Their `add` tool is called sequentially (one in flight,
warm connections), in interleaved rounds, through `RemoteMcpRuntime.invoke` (what the pool runs for
a call), and by the SDK's own `sse_client` as the baseline for SSE. Wall time per call (p50, p99)
and the CPU time of this process per call (the runtime runs here; the servers do not).

    .venv/bin/python bench/mcp_sse_call.py [--calls 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import Client
from mcp.client.sse import sse_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.openapi_call import free_port, process, timed, wait_for  # noqa: E402
from toolmesh.config import RuntimeConfig  # noqa: E402
from toolmesh.gateway.sources.remote_mcp import RemoteMcpRuntime  # noqa: E402
from toolmesh.protocol.calls import Call  # noqa: E402

ARGUMENTS = json.dumps({"a": 2, "b": 40}).encode()


def runtime_call(runtime: RemoteMcpRuntime) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await runtime.invoke(Call("clock.add", ARGUMENTS), 10)
        assert result.structured is not None and result.structured["total"] == 42, result

    return call


async def measure(urls: dict[str, str], calls: int, rounds: int) -> dict[str, tuple[list[float], float]]:
    runtimes = {
        name: RemoteMcpRuntime(RuntimeConfig(name="clock", mcp_url=url, mcp_transport=transport), {})
        for name, (url, transport) in {
            "Streamable HTTP, event-stream answers": (urls["events"], "streamable-http"),
            "Streamable HTTP, JSON answers": (urls["json"], "streamable-http"),
            "HTTP+SSE": (urls["sse"], "sse"),
        }.items()
    }
    for runtime in runtimes.values():
        await runtime.start()
        assert runtime.ready, runtime.error
    samples: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    async with Client(sse_client(urls["sse"])) as official:

        async def call_official() -> None:
            answer = await official.call_tool("add", {"a": 2, "b": 40})
            assert answer.structured_content is not None and answer.structured_content["total"] == 42

        targets = {name: runtime_call(runtime) for name, runtime in runtimes.items()}
        targets["HTTP+SSE, the SDK's sse_client"] = call_official
        for _ in range(rounds):
            for name, call in targets.items():
                started = time.process_time()
                samples.setdefault(name, []).extend(await timed(call, calls))
                cpu[name] = cpu.get(name, 0.0) + time.process_time() - started
    for runtime in runtimes.values():
        await runtime.close()
    # `timed` warms with 50 calls each round: they count in the CPU too.
    return {name: (samples[name], cpu[name] / (rounds * (calls + 50))) for name in samples}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="calls per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    ports = {"events": free_port(), "json": free_port(), "sse": free_port()}
    flags = {"events": ["--legacy"], "json": ["--legacy", "--json"], "sse": ["--sse"]}
    urls = {
        kind: f"http://127.0.0.1:{port}/{'sse' if kind == 'sse' else 'mcp'}" for kind, port in ports.items()
    }
    command = [sys.executable, "-m", "tests.fixtures.http_mcp_server"]
    with (
        process([*command, str(ports["events"]), *flags["events"]], env),
        process([*command, str(ports["json"]), *flags["json"]], env),
        process([*command, str(ports["sse"]), *flags["sse"]], env),
    ):
        for port in ports.values():
            wait_for(f"http://127.0.0.1:{port}/")
        results = asyncio.run(measure(urls, args.calls, args.rounds))
    base = statistics.median(results["Streamable HTTP, event-stream answers"][0])
    print(f"{args.rounds} rounds x {args.calls} sequential calls per target")
    print(
        "| target | p50 µs | p99 µs | p50 vs Streamable (events) | CPU µs per call |\n|---|---|---|---|---|"
    )
    for name, (samples, cpu) in results.items():
        samples.sort()
        p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99)]
        print(f"| {name} | {p50:.0f} | {p99:.0f} | {p50 / base:.2f}x | {cpu * 1e6:.0f} |")


if __name__ == "__main__":
    main()
