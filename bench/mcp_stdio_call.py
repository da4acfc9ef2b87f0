"""A stdio MCP server as a runtime against calling it directly with the official client (issue #29).

The server is tests/fixtures/stdio_mcp_server.py (written with the MCP SDK); its `add` tool is called
sequentially (one in flight), warm, in interleaved rounds:

  direct stdio      the SDK's ClientSession over stdio to a server this process started: the baseline
  via gateway       `POST /v1/functions/clock.add/invoke` on `toolmesh up` (its own process), whose pod
                    forwards the call to its server over stdio. Target: p50 within 1.3x of direct.
  gateway noop      a Python no-op function on that gateway: what the gateway and a pod cost on their own

Then cold starts, the first call after the runtime scaled to zero (idle_timeout), side by side with a
Python runtime's: for MCP the pod and its server start (the tools were listed when the gateway started).

    .venv/bin/python bench/mcp_stdio_call.py [--calls 1000] [--rounds 3] [--cold 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, "-m", "tests.fixtures.stdio_mcp_server"]
#: Seconds without calls before a pod stops, in the cold-start part.
IDLE = 1.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def timed(call: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(50):
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1e6)
    return samples


async def warm(gateway: str, env: dict[str, str], calls: int, rounds: int) -> dict[str, list[float]]:
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=env, cwd=str(ROOT))
    results: dict[str, list[float]] = {}
    body = json.dumps({"a": 2, "b": 40}).encode()
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
        httpx.AsyncClient(base_url=gateway, timeout=30) as client,
    ):
        await session.initialize()

        async def direct() -> None:
            answer = await session.call_tool("add", {"a": 2, "b": 40})
            assert answer.structured_content is not None and answer.structured_content["total"] == 42

        async def gateway_call() -> None:
            answer = (await client.post("/v1/functions/clock.add/invoke", content=body)).json()
            assert answer["structured"]["total"] == 42, answer

        async def noop() -> None:
            answer = (await client.post("/v1/functions/noop/invoke", content=b"{}")).json()
            assert answer["is_error"] is False, answer

        targets = {"direct stdio": direct, "via gateway": gateway_call, "gateway noop": noop}
        for _ in range(rounds):
            for name, call in targets.items():
                results.setdefault(name, []).extend(await timed(call, calls))
    return results


async def cold(gateway: str, samples: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    calls = {"clock.add": b'{"a": 1, "b": 2}', "noop": b"{}"}
    async with httpx.AsyncClient(base_url=gateway, timeout=60) as client:
        for _ in range(samples):
            await asyncio.sleep(IDLE + 2)  # both runtimes at zero pods
            for name, body in calls.items():
                started = time.perf_counter()
                answer = (await client.post(f"/v1/functions/{name}/invoke", content=body)).json()
                results.setdefault(name, []).append((time.perf_counter() - started) * 1e3)
                assert answer["is_error"] is False, answer
    return results


def start_gateway(work: Path, env: dict[str, str], port: int, idle: float | None) -> subprocess.Popen[str]:
    idle_line = f"idle_timeout = {idle}\n" if idle is not None else "min_replicas = 1\n"
    config = work / f"toolmesh-{port}.toml"
    config.write_text(
        f"[gateway]\nhttp_port = {port}\ngrpc_port = 0\naccess_log = false\n"
        f'[[runtimes]]\nname = "noop"\nmodules = ["bench.noop_tools"]\nlog_level = "warning"\n{idle_line}'
        f'[[runtimes]]\nname = "clock"\nmcp_command = {json.dumps(SERVER)}\n'
        f'log_level = "warning"\n{idle_line}'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "TMPDIR": str(work), "XDG_DATA_HOME": str(work / "data")},
        cwd=ROOT,
    )
    assert process.stdout is not None
    process.stdout.readline()  # the ready line
    return process


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def table(title: str, results: dict[str, list[float]], unit: str, base: str | None) -> None:
    print(title)
    print(f"| target | p50 {unit} | p99 {unit} |" + (f" p50 vs {base} |" if base else ""))
    print("|---|---|---|" + ("---|" if base else ""))
    reference = statistics.median(results[base]) if base else 0.0
    for name, samples in results.items():
        samples.sort()
        p50, p99 = statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        ratio = f" {p50 / reference:.2f}x |" if base else ""
        print(f"| {name} | {p50:.0f} | {p99:.0f} |{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="warm calls per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", type=int, default=5, help="cold starts per runtime")
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory(prefix="tm-bench-") as tmp:
        port = free_port()
        gateway = start_gateway(Path(tmp), env, port, None)
        try:
            results = asyncio.run(warm(f"http://127.0.0.1:{port}", env, args.calls, args.rounds))
        finally:
            stop(gateway)
        port = free_port()
        gateway = start_gateway(Path(tmp), env, port, IDLE)
        try:
            starts = asyncio.run(cold(f"http://127.0.0.1:{port}", args.cold))
        finally:
            stop(gateway)
    table(
        f"warm: {args.rounds} rounds x {args.calls} sequential calls per target",
        results,
        "µs",
        "direct stdio",
    )
    print()
    table(f"cold: the first call after scale to zero, {args.cold} each", starts, "ms", None)


if __name__ == "__main__":
    main()
