"""What a rate-limit check costs per call: in the gateway's process, and in Redis on loopback.

    .venv/bin/python bench/state_redis.py [--calls N] [--rounds R] [--json]

Targets, each timing `await principal.spend()` (what every call, routing and chat request pays)
on a key with a rate far above what the run spends, so every check passes:

    sync bucket (before)   the in-process bucket called synchronously, as spend() was before
                           shared state: the floor the local path must stay at
    local                  `await principal.spend()`, LocalLimits (no [state])
    redis                  `await principal.spend()`, RedisLimits: one EVALSHA of the Lua bucket
                           to a redis-server this script starts on a free loopback port
    redis, 8 concurrent    the same, 8 checks in flight at once on the gateway's one pool

Rounds alternate the targets' order, on one uvloop event loop (the gateway's); medians of the
rounds' p50 and p99 are shown.

Then the same check in its place, end to end: `toolmesh up` serving bench/noop_tools.py with one
warm pod and a key with a rate limit (never reached), POST /v1/functions/noop/invoke one request
at a time by h2load, with no [state] and with TOOLMESH_STATE_URL at the same redis-server, the
two gateways alternating by round (`--gateway-requests 0` skips it).

Needs `redis-server` (apt-get install redis-server) and, for the second table, h2load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from gateway_invoke import BENCH, HOST, Target, _ready_line, h2load, started

from toolmesh.config import hash_key
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.state.limits import LocalLimits, TokenBucket
from toolmesh.gateway.state.redis_client import Outage, connect
from toolmesh.gateway.state.redis_limits import RedisLimits

RATE = 1e9  # never the limit: the check, not a refusal, is measured
TARGET_P50_MS = 0.3
NO_DISK = ("--save", "", "--appendonly", "no")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(directory: str) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, *NO_DISK],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.02)
    process.kill()
    sys.exit("redis-server did not start")


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def timed(check: Callable[[], Awaitable[None]], calls: int, concurrency: int) -> list[float]:
    """Each check's duration in ms; concurrency 0 times a sync in-process bucket instead (no await)."""
    samples: list[float] = []
    if concurrency == 0:
        bucket = TokenBucket(RATE, int(RATE))
        for _ in range(calls):
            started = time.perf_counter_ns()
            bucket.take_now()
            samples.append((time.perf_counter_ns() - started) / 1e6)
        return samples

    async def worker(n: int) -> None:
        for _ in range(n):
            started = time.perf_counter_ns()
            await check()
            samples.append((time.perf_counter_ns() - started) / 1e6)

    await asyncio.gather(*(worker(calls // concurrency) for _ in range(concurrency)))
    return samples


async def run(calls: int, rounds: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="tm-") as directory:
        process, url = start_redis(directory)
        client = connect(url, timeout=1.0)
        try:
            local = Principal("local", bucket=LocalLimits().bucket("local", RATE, int(RATE)))
            limits = RedisLimits(client, "bench:", Outage(url))
            shared = Principal("redis", bucket=limits.bucket("k", RATE, 10**9))
            targets: dict[str, tuple[Callable[[], Awaitable[None]], int]] = {
                "sync bucket (before)": (local.spend, 0),  # concurrency 0: see timed()
                "local": (local.spend, 1),
                "redis": (shared.spend, 1),
                "redis, 8 concurrent": (shared.spend, 8),
            }
            for check, concurrency in targets.values():  # warm up: connections, the script, caches
                await timed(check, 200, concurrency)
            p50s: dict[str, list[float]] = {name: [] for name in targets}
            p99s: dict[str, list[float]] = {name: [] for name in targets}
            for round_ in range(rounds):
                order = list(targets) if round_ % 2 == 0 else list(reversed(targets))
                for name in order:
                    check, concurrency = targets[name]
                    p50, p99 = percentiles(await timed(check, calls, concurrency))
                    p50s[name].append(p50)
                    p99s[name].append(p99)
        finally:
            await client.aclose()
            process.kill()
            process.wait()
    return {
        name: {"p50_ms": statistics.median(p50s[name]), "p99_ms": statistics.median(p99s[name])}
        for name in p50s
    }


KEY = "bench-key"


def gateway_latency(url: str | None, requests: int, workdir: str) -> tuple[float, float]:
    """p50 and p99 (ms) of a no-op call through a gateway whose key has a rate limit."""
    work = Path(workdir)
    config = work / "toolmesh.toml"
    config.write_text(
        '[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n\n'
        f'[[keys]]\nname = "bench"\nkey_hash = "{hash_key(KEY)}"\nrate = {RATE:g}\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "TOOLMESH_STATE_URL"}
    if url is not None:
        env["TOOLMESH_STATE_URL"] = url
    command = [sys.executable, "-m", "toolmesh", "up", "--config", str(config)]
    with started(command, env, work / "gateway.err") as gateway:
        port = _ready_line(gateway)["http_port"]
        target = Target(
            "redis" if url else "local",
            "gateway",
            f"http://{HOST}:{port}/v1/functions/noop/invoke",
            b"{}",
            False,
        )
        auth = [f"authorization: Bearer {KEY}"]
        h2load(target, max(requests // 5, 200), 1, work, auth)
        run = h2load(target, requests, 1, work, auth)
    return run.p50_us / 1000, run.p99_us / 1000


def gateway_table(requests: int, rounds: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="tm-") as directory:
        process, url = start_redis(directory)
        try:
            samples: dict[str, list[tuple[float, float]]] = {"no [state]": [], "[state] in Redis": []}
            for round_ in range(rounds):
                order = [None, url] if round_ % 2 == 0 else [url, None]
                for which in order:
                    name = "[state] in Redis" if which else "no [state]"
                    samples[name].append(gateway_latency(which, requests, directory))
        finally:
            process.kill()
            process.wait()
    return {
        name: {
            "p50_ms": statistics.median(s[0] for s in runs),
            "p99_ms": statistics.median(s[1] for s in runs),
        }
        for name, runs in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="checks per target per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gateway-requests", type=int, default=5000, help="0: skip the gateway table")
    parser.add_argument("--gateway-rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        import uvloop

        results = uvloop.run(run(args.calls, args.rounds))
    except ImportError:
        results = asyncio.run(run(args.calls, args.rounds))
    gateway = gateway_table(args.gateway_requests, args.gateway_rounds) if args.gateway_requests else {}
    if args.json:
        print(json.dumps({"check": results, "gateway": gateway}, indent=2))
        return
    print(f"{args.calls} checks per target per round, {args.rounds} rounds (medians)\n")
    print("| rate-limit check | p50 ms | p99 ms |")
    print("|---|---:|---:|")
    for name, result in results.items():
        print(f"| {name} | {result['p50_ms']:.4f} | {result['p99_ms']:.4f} |")
    redis_p50 = results["redis"]["p50_ms"]
    verdict = "met" if redis_p50 <= TARGET_P50_MS else "NOT met"
    print(f"\ntarget (redis p50 <= {TARGET_P50_MS} ms): {verdict}, {redis_p50:.3f} ms")
    if gateway:
        print(
            f"\n{args.gateway_requests} no-op calls per gateway per round, c=1, "
            f"{args.gateway_rounds} rounds\n"
        )
        print("| POST /v1/functions/noop/invoke, rate-limited key | p50 ms | p99 ms |")
        print("|---|---:|---:|")
        for name, result in gateway.items():
            print(f"| {name} | {result['p50_ms']:.3f} | {result['p99_ms']:.3f} |")


if __name__ == "__main__":
    main()
