"""Hot reload: an edit to a runtime's module, until the new code answers, under load.

    .venv/bin/python bench/hot_reload.py [--reloads 10] [--callers 8]

`toolmesh up --reload` serves a module in a temporary directory (one warm pod, the
router off). `--callers` clients call it in a loop the whole time, half of them a
function that holds its pod for 50 ms (calls in flight while the old pods drain).
Each reload rewrites the module with a new version string; the time from the write
until a call answers with it is the reload's latency (the watcher's poll, the new
template's imports, its pods' start, the switch). Every call that fails is counted.
Target: p50 ≤ 1 s, and no failed call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MODULE = '''
import time

VERSION = "{version}"


def version() -> str:
    """Which version answers."""
    return VERSION


def pause(seconds: float) -> str:
    """Hold the pod a while, then say which version answered."""
    time.sleep(seconds)
    return VERSION
'''
CONFIG = """[gateway]
http_port = 0
grpc_port = 0
[router]
enabled = false
[[runtimes]]
name = "bench"
modules = ["bench_reload_tools"]
min_replicas = 1
"""


async def call(http: httpx.AsyncClient, function: str, arguments: dict[str, float]) -> str:
    response = await http.post(f"/v1/functions/{function}/invoke", json=arguments)
    response.raise_for_status()
    body = response.json()
    if body["is_error"]:
        raise RuntimeError(body)
    return str(body["content"][0]["text"])


async def measure(url: str, module: Path, reloads: int, callers: int) -> dict[str, object]:
    calls = 0
    failures: list[str] = []
    running = True
    limits = httpx.Limits(max_connections=callers + 2)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:

        async def caller(index: int) -> None:
            nonlocal calls
            function, arguments = ("pause", {"seconds": 0.05}) if index % 2 else ("version", {})
            while running:
                try:
                    await call(http, function, arguments)
                    calls += 1
                except Exception as exc:  # every failure is the measurement
                    failures.append(repr(exc))

        tasks = [asyncio.create_task(caller(i)) for i in range(callers)]
        latencies = []
        for n in range(1, reloads + 1):
            await asyncio.sleep(1.0)  # load settles; the old pods' calls finish
            wanted = f"v{n}"
            started = time.perf_counter()
            await asyncio.to_thread(module.write_text, MODULE.format(version=wanted))
            while await call(http, "version", {}) != wanted:
                if time.perf_counter() - started > 30:
                    raise RuntimeError(f"{wanted} did not answer within 30 s")
                await asyncio.sleep(0.01)
            latencies.append(time.perf_counter() - started)
        await asyncio.sleep(1.0)
        running = False
        await asyncio.gather(*tasks)
    latencies.sort()
    return {
        "reloads": reloads,
        "callers": callers,
        "p50_s": statistics.median(latencies),
        "p90_s": latencies[int(0.9 * (len(latencies) - 1))],
        "max_s": latencies[-1],
        "calls": calls,
        "failed": len(failures),
        "first_failures": failures[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reloads", type=int, default=10)
    parser.add_argument("--callers", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tm-reload-"))
    module = work / "bench_reload_tools.py"
    module.write_text(MODULE.format(version="v0"))
    (work / "toolmesh.toml").write_text(CONFIG)
    log = (work / "gateway.log").open("w")  # a pipe nobody reads would fill and stall the pods
    process = subprocess.Popen(
        [sys.executable, "-m", "toolmesh", "up", "--reload", "--config", str(work / "toolmesh.toml")],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=work,
    )
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        url = f"http://127.0.0.1:{ready['http_port']}"
        result = asyncio.run(measure(url, module, args.reloads, args.callers))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    print(f"hot reload: {args.reloads} edits under {args.callers}-way load\n")
    print("| reloads | p50 edit → new code answering | p90 | max | calls during the run | failed calls |")
    print("|---|---|---|---|---|---|")
    times = " | ".join(f"{result[key]:.2f} s" for key in ("p50_s", "p90_s", "max_s"))
    print(f"| {result['reloads']} | {times} | {result['calls']} | {result['failed']} |")
    if result["failed"]:
        print("first failures:", *result["first_failures"], sep="\n  ")  # type: ignore[misc]


if __name__ == "__main__":
    main()
