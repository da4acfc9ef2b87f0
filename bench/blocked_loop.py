"""A blocked event loop under load: what callers of the other functions see (issue #28).

    .venv/bin/python bench/blocked_loop.py [--seconds 30] [--clients 8] [--before DIR] [--json]

`toolmesh up` runs as a real subprocess with one runtime serving bench/chaos_tools.py
(min 2, max 4 pods). Eight clients call `lookup` (idempotent) and `append` (not idempotent)
over HTTP for --seconds, while one more caller, every 7 s, calls a function whose async code
blocks its pod's event loop for 5 s (`time.sleep` in an `async def`):

    blocked 5 s        `blocker`: 5 s, within its timeout (30 s)
    blocked past limit `overrun`: 5 s, past its own 2 s timeout

Printed, per scenario and per gateway (this checkout, and with --before the checkout at DIR,
e.g. /work/main before the change, run with the same bench tools): calls of the other
functions, failures by status and code, their p50/p99/max latency, what the blocking calls
got, and the gateway's pod restarts by reason.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from chaos import CALL_TIMEOUT, FUNCTIONS, ROOT, Call, call, config_text, gateway, percentile, wait_ready

BLOCK_FOR = 5.0
BLOCK_EVERY = 7.0
SCENARIOS = {"blocked 5 s": "blocker", "blocked past limit": "overrun"}


async def load(url: str, seconds: float, clients: int, blocking: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients + 1, max_keepalive_connections=clients + 1)
    async with httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT, limits=limits) as http:
        await wait_ready(http)
        await asyncio.sleep(1.0)  # both pods up
        calls: list[Call] = []
        blocks: list[Call] = []
        until = time.monotonic() + seconds

        async def caller(number: int) -> None:
            sequence = 0
            while time.monotonic() < until:
                function = FUNCTIONS[(number + sequence) % len(FUNCTIONS)]
                key = f"k{number}-{sequence}"
                argument = {"key": key} if function == "lookup" else {"item": key}
                calls.append(await call(http, function, argument))
                sequence += 1

        async def block() -> None:
            while time.monotonic() + BLOCK_FOR < until:
                started = time.monotonic()
                blocks.append(await call(http, blocking, {"seconds": BLOCK_FOR}))
                await asyncio.sleep(max(0.0, started + BLOCK_EVERY - time.monotonic()))

        await asyncio.gather(block(), *(caller(n) for n in range(clients)))
        metrics = (await http.get("/metrics")).text
    restarts = {
        reason: float(value)
        for reason, value in re.findall(
            r'toolmesh_pod_restarts_total\{reason="(\w+)",runtime="chaos"\} (\S+)', metrics
        )
    }
    return {"calls": calls, "blocks": blocks, "restarts": {r: int(v) for r, v in restarts.items() if v}}


def summarize(run: dict[str, Any]) -> dict[str, Any]:
    calls: list[Call] = run["calls"]
    ok = [c for c in calls if c.ok]
    latencies = [(c.done - c.sent) * 1000 for c in ok]
    failures = Counter(f"{c.function} {c.status or 'none'} {c.code}" for c in calls if not c.ok)
    blocks = Counter("ok" if c.ok else f"{c.status or 'none'} {c.code}" for c in run["blocks"])
    return {
        "requests": len(calls),
        "failures": sum(failures.values()),
        "failed": dict(failures),
        "p50_ms": statistics.median(latencies) if latencies else 0.0,
        "p99_ms": percentile(latencies, 99) if latencies else 0.0,
        "max_ms": max(latencies, default=0.0),
        "blocking_calls": dict(blocks),
        "restarts": run["restarts"],
    }


def run_one(code: Path, scenario: str, seconds: float, clients: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="blocked-loop-") as directory:
        workdir = Path(directory)
        config = config_text(2)
        with gateway(workdir, config, "gateway", cwd=code) as (_, url):
            run = asyncio.run(load(url, seconds, clients, SCENARIOS[scenario]))
    return summarize(run)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--before", type=Path, help="another checkout to run the same load against")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    codes = {"this branch": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    results = []
    for scenario in SCENARIOS:
        for label, code in codes.items():
            summary = run_one(code, scenario, args.seconds, args.clients)
            results.append({"scenario": scenario, "gateway": label, **summary})
            print(f"done: {scenario}, {label}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{args.seconds:g} s, {args.clients} clients, cpus {os.cpu_count()}; a {BLOCK_FOR:g} s block "
        f"every {BLOCK_EVERY:g} s"
    )
    print()
    print(
        "| scenario | gateway | other calls | failed | p50 ms | p99 ms | max ms | blocking calls got "
        "| pod restarts |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|---|")
    for row in results:
        got = ", ".join(f"{n} {what}" for what, n in row["blocking_calls"].items())
        restarts = ", ".join(f"{n} {why}" for why, n in row["restarts"].items()) or "0"
        print(
            f"| {row['scenario']} | {row['gateway']} | {row['requests']} | {row['failures']} "
            f"| {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row['max_ms']:.0f} | {got} | {restarts} |"
        )
    print()
    for row in results:
        for what, n in row["failed"].items():
            print(f"{row['scenario']}, {row['gateway']}: {n} x {what}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
