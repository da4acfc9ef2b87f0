"""The pod's half of a stdio MCP call alone: the official SDK's ClientSession against the lean
JSON-RPC client the bridge uses (runtimes/mcp/stdio_session.py), in one plain event loop.

Both call the `add` tool of tests/fixtures/stdio_mcp_server.py (a server each, started here),
sequentially, warm, in interleaved rounds. This isolates what the bridge's client costs from the
gateway and the pod around it (bench/mcp_stdio_call.py measures the whole call).

    .venv/bin/python bench/mcp_stdio_client.py [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolmesh.runtimes.mcp.stdio_session import StdioSession  # noqa: E402

SERVER = [sys.executable, "-m", "tests.fixtures.stdio_mcp_server"]


async def timed(call: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(50):
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


async def run(calls: int, rounds: int) -> dict[str, list[float]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=env, cwd=str(ROOT))
    lean = await StdioSession.start(SERVER, env)
    results: dict[str, list[float]] = {}
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def sdk() -> None:
                answer = await session.call_tool("add", {"a": 2, "b": 40})
                assert answer.structured_content is not None and answer.structured_content["total"] == 42

            async def stdio_session() -> None:
                answer = await lean.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
                assert answer["structuredContent"]["total"] == 42

            targets = {
                "SDK ClientSession.call_tool": sdk,
                "StdioSession.request (the bridge's)": stdio_session,
            }
            for _ in range(rounds):
                for name, call in targets.items():
                    results.setdefault(name, []).extend(await timed(call, calls))
    finally:
        await lean.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.chdir(ROOT)
    results = asyncio.run(run(args.calls, args.rounds))
    base = statistics.median(results["SDK ClientSession.call_tool"])
    print(f"{args.rounds} rounds x {args.calls} sequential calls per target")
    print("| client | p50 µs | p99 µs | p50 vs SDK |\n|---|---|---|---|")
    for name, samples in results.items():
        p50 = statistics.median(samples)
        p99 = statistics.quantiles(samples, n=100)[98]
        print(f"| {name} | {p50:.0f} | {p99:.0f} | {p50 / base:.2f}x |")


if __name__ == "__main__":
    main()
