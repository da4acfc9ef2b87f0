"""What `ctx.state` costs, kept in SQLite and in Redis, side by side in one run.

    .venv/bin/python bench/function_state.py [--calls N] [--rounds R]

Two gateways in this process (one event loop, uvloop), each serving bench/state_bench_tools.py
and bench/noop_tools.py (another runtime) with one warm pod each: one gateway keeps function state in
its SQLite file (no [state]), the other in a redis-server this script starts on a free loopback port.

Through the pod's channel to the gateway, timed inside a function, taking turns 200 times a round:

    get               `await ctx.state.get(key)`: Mesh.State, the gateway, the store
    no-op call        `await ctx.invoke("noop")`: Mesh.Invoke, the gateway, the other runtime's pod

And end to end, one caller at a time over HTTP (the SDK's AsyncClient), taking turns:
`noop()` against `state_get(key)`, a function making one `ctx.state.get`.

Rounds alternate the gateways' order; medians of the rounds' p50 are shown. Targets: a get within
0.5 ms of a no-op call on SQLite, within 1 ms on Redis (the in-pod columns).

Then, per store, a runtime of 4 pods (min_replicas = max_replicas = 4): 40 calls at once, each
making 25 concurrent `ctx.state.incr` of one key: 1,000 increments from 4 pods; none may be lost.
Needs `redis-server` (apt-get install redis-server).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import uvloop
from state_redis import start_redis

from toolmesh import AsyncClient
from toolmesh.config import (
    FunctionStateConfig,
    GatewayConfig,
    MeshConfig,
    RouterConfig,
    RuntimeConfig,
    StateConfig,
)
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.gateway.server import Gateway, start_gateway

BENCH = Path(__file__).resolve().parent
TARGETS_MS = {"sqlite": 0.5, "redis": 1.0}


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


async def gateway(workdir: Path, name: str, url: str | None, **runtime: int) -> Gateway:
    config = MeshConfig(
        directory=BENCH,
        gateway=GatewayConfig(http_port=0, grpc_port=0, access_log=False),
        runtimes=(
            RuntimeConfig(name="bench", modules=("state_bench_tools",), log_level="warning", **runtime),
            RuntimeConfig(name="other", modules=("noop_tools",), log_level="warning", min_replicas=1),
        ),
        router=RouterConfig(enabled=False),
        state=StateConfig(url=url),
        jobs=JobsConfig(path=workdir / f"jobs-{name}.sqlite3"),
        function_state=FunctionStateConfig(path=workdir / f"state-{name}.sqlite3"),
    )
    # The pods import toolmesh from where this script does (a worktree on PYTHONPATH, say).
    return await start_gateway(config, environ={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})


async def timed(client: AsyncClient, calls: int) -> dict[str, list[float]]:
    """End to end, taking turns: a no-op call and a call making one get."""
    spent: dict[str, list[float]] = {"noop": [], "state_get": []}
    for _ in range(calls):
        for function, arguments in (("noop", {}), ("state_get", {"key": "profile"})):
            started = time.perf_counter()
            result = await client.invoke(function, arguments)
            spent[function].append((time.perf_counter() - started) * 1000)
            assert not result.is_error, result.error
    return spent


async def latency(workdir: Path, url: str, calls: int, rounds: int) -> dict[str, dict[str, float]]:
    stores = {"sqlite": None, "redis": url}
    gateways = {name: await gateway(workdir, name, where, min_replicas=1) for name, where in stores.items()}
    clients = {name: AsyncClient(g.url, timeout=60) for name, g in gateways.items()}
    columns = ("pod_get", "pod_noop", "noop", "state_get")
    seen = {name: {column: list[float]() for column in columns} for name in stores}
    try:
        for client in clients.values():
            await client.invoke("seed", {"key": "profile"})
            await timed(client, 50)  # warm every road
            await client.invoke("timed_channel", {"key": "profile", "times": 50})
        for round_ in range(rounds):
            order = list(stores) if round_ % 2 == 0 else list(reversed(stores))
            for name in order:
                client = clients[name]
                inside = (await client.invoke("timed_channel", {"key": "profile", "times": 200})).structured
                seen[name]["pod_get"].append(p50(inside["get"]))
                seen[name]["pod_noop"].append(p50(inside["noop"]))
                for function, spent in (await timed(client, calls)).items():
                    seen[name][function].append(p50(spent))
    finally:
        for client in clients.values():
            await client.close()
        for g in gateways.values():
            await g.stop(grace=0)
    return {name: {what: p50(values) for what, values in row.items()} for name, row in seen.items()}


async def no_lost_incr(workdir: Path, name: str, url: str | None) -> tuple[int, int, float]:
    g = await gateway(workdir, f"incr-{name}", url, min_replicas=4, max_replicas=4, target_concurrency=1)
    client = AsyncClient(g.url, timeout=120)
    try:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(client.invoke("incr_many", {"key": "hits", "times": 25}) for _ in range(40))
        )
        seconds = time.perf_counter() - started
        assert all(not r.is_error for r in results), [r.error for r in results if r.is_error]
        total = (await client.invoke("state_get", {"key": "hits"})).structured
        return int(total), len({r.structured for r in results}), seconds
    finally:
        await client.close()
        await g.stop(grace=0)


async def run(calls: int, rounds: int) -> int:
    with tempfile.TemporaryDirectory(prefix="tm-state-bench-") as tmp:
        workdir = Path(tmp)
        redis, url = start_redis(tmp)
        try:
            table = await latency(workdir, url, calls, rounds)
            incrs = {
                name: await no_lost_incr(workdir, name, where)
                for name, where in (("sqlite", None), ("redis", url))
            }
        finally:
            redis.kill()
            redis.wait()
    ok = True
    print(
        f"\nctx.state latency: {rounds} rounds x {calls} calls, one caller at a time"
        " (median of round p50s, ms)\n"
    )
    print(
        "| store | in the pod: get | in the pod: no-op ctx.invoke | get - no-op | target "
        "| HTTP: no-op call | HTTP: call with one get | difference |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, row in table.items():
        difference = row["pod_get"] - row["pod_noop"]
        met = difference <= TARGETS_MS[name]
        ok &= met
        print(
            f"| {name} | {row['pod_get']:.3f} | {row['pod_noop']:.3f} | {difference:+.3f} "
            f"| <= {TARGETS_MS[name]} {'met' if met else 'MISSED'} | {row['noop']:.3f} "
            f"| {row['state_get']:.3f} | {row['state_get'] - row['noop']:+.3f} |"
        )
    print("\n1,000 concurrent incrs from 4 pods (40 calls x 25 concurrent incrs)\n")
    print("| store | pods used | final count | lost | seconds |")
    print("|---|---|---|---|---|")
    for name, (total, pods, seconds) in incrs.items():
        ok &= total == 1000
        print(f"| {name} | {pods} | {total} | {1000 - total} | {seconds:.2f} |")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    return uvloop.run(run(args.calls, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
