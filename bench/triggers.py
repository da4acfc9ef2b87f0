"""Redis Streams triggers: message-to-function-start latency, and throughput to a no-op function
with none lost or doubled.

    .venv/bin/python bench/triggers.py [--latency N] [--messages N] [--workers W] [--json]

A fresh `redis-server` on loopback; per row, a gateway in this process (one warm pod of
bench/trigger_tools.py) with a `redis_stream` trigger, its jobs in Redis (`[state] url`) or in a
SQLite file (the trigger's `redis_url` only). This process XADDs with its own client.

    latency      --latency entries one at a time, each carrying its send time; the function returns
                 its start time: p50/p99 of start - sent (the same clock)
    throughput   --messages entries XADDed at once (pipelined); from the first XADD until every job
                 has succeeded: messages/s (recorded/s: until every entry is recorded as a job and
                 acknowledged, the trigger's part); then the jobs are counted: each entry exactly
                 one job
    schedule     two gateways sharing the Redis, an `every = "1s"` trigger for --schedule seconds:
                 ticks fired twice (must be 0), ticks missed, and tick-to-function-start p50/max
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis.asyncio as redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolmesh.config import GatewayConfig, MeshConfig, RouterConfig, RuntimeConfig, StateConfig  # noqa: E402
from toolmesh.config.jobs_config import JobsConfig, TriggerConfig  # noqa: E402
from toolmesh.directories import ProjectConfig  # noqa: E402
from toolmesh.gateway.jobs.job import JobStatus  # noqa: E402
from toolmesh.gateway.server import Gateway, start_gateway  # noqa: E402
from toolmesh.gateway.triggers.trigger_service import message_job_id  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def gateway(url: str, store: str, data: Path, workers: int, stream: str) -> Gateway:
    trigger = TriggerConfig(
        name=stream,
        function="started",
        redis_stream=stream,
        redis_url=None if store == "redis" else url,
    )
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0, access_log=False),
        runtimes=(
            RuntimeConfig(
                name="bench",
                modules=("trigger_tools",),
                env={"PYTHONPATH": str(ROOT / "bench")},
                min_replicas=1,
            ),
        ),
        router=RouterConfig(enabled=False),
        state=StateConfig(url=url if store == "redis" else None),
        jobs=JobsConfig(path=data / f"jobs-{stream}.sqlite3", workers=workers, max_queued=1_000_000),
        project=ProjectConfig(data_dir=data / stream),
        triggers=(trigger,),
    )
    return await start_gateway(config, environ={})


async def results(gw: Gateway, stream: str) -> list[Any]:
    assert gw.jobs is not None
    return list(await gw.jobs.store.list("anonymous", None, 10_000_000))


async def run_row(url: str, store: str, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    stream = f"bench-{store}"
    client = redis.Redis.from_url(url)
    gw = await gateway(url, store, data, args.workers, stream)
    try:
        await asyncio.sleep(1.0)  # the group exists, the pod is warm
        assert gw.jobs is not None
        # Warm the whole path once.
        await client.xadd(stream, {"json": json.dumps({"sent": time.time()})})
        while not [j for j in await results(gw, stream) if j.status is JobStatus.SUCCEEDED]:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        delays = []
        for _ in range(args.latency):
            entry = (await client.xadd(stream, {"json": json.dumps({"sent": time.time()})})).decode()
            job_id = message_job_id(stream, entry)
            while True:
                job = await gw.jobs.store.get(job_id)
                if job is not None and job.status.finished:
                    break
                await asyncio.sleep(0.001)
            assert job.status is JobStatus.SUCCEEDED, job
            start = float(json.loads(job.result or b"{}")["structured"])
            delays.append((start - json.loads(job.arguments)["sent"]) * 1000)
        began, cpu = time.perf_counter(), time.process_time()
        pipe = client.pipeline(transaction=False)
        for n in range(args.messages):
            pipe.xadd(stream, {"n": str(n)})
        last = (await pipe.execute())[-1]
        recorded = None
        while True:  # every entry read and acknowledged (so recorded), and no job left to run
            (group,) = await client.xinfo_groups(stream)
            drained = group["last-delivered-id"] == last and group["pending"] == 0
            if drained and recorded is None:
                recorded = time.perf_counter() - began
            if drained and await gw.jobs.store.count_active() == 0:
                break
            await asyncio.sleep(0.02)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        jobs = await results(gw, stream)
        mine = [j for j in jobs if j.request_id.startswith("stream:") and b'"n"' in j.arguments]
        ns = [json.loads(j.arguments)["n"] for j in mine]
        delays.sort()
        return {
            "jobs": store,
            "latency p50 ms": round(statistics.median(delays), 2),
            "latency p99 ms": round(delays[min(len(delays) - 1, int(len(delays) * 0.99))], 2),
            "messages": args.messages,
            "messages/s": round(args.messages / seconds),
            # Entries read and recorded as jobs per second (the trigger's part, without running them).
            "recorded/s": round(args.messages / (recorded or seconds)),
            # CPU time of this process (the gateway, its store threads, the bench's own polling;
            # not the pod's nor redis-server's) per message: what a shared machine's load moves least.
            "gateway CPU us/msg": round(cpu / args.messages * 1e6),
            "succeeded": sum(j.status is JobStatus.SUCCEEDED for j in mine),
            "lost": args.messages - len(set(ns)),
            "doubled": len(ns) - len(set(ns)),
        }
    finally:
        await gw.stop(grace=0)
        await client.aclose()


async def schedule_row(url: str, data: Path, seconds: int) -> dict[str, Any]:
    beat = TriggerConfig(name="beat", function="started", every="1s")
    gateways = []
    for n in range(2):
        config = MeshConfig(
            gateway=GatewayConfig(http_port=0, grpc_port=0, access_log=False),
            runtimes=(
                RuntimeConfig(
                    name="bench",
                    modules=("trigger_tools",),
                    env={"PYTHONPATH": str(ROOT / "bench")},
                    min_replicas=1,
                ),
            ),
            router=RouterConfig(enabled=False),
            state=StateConfig(url=url),
            jobs=JobsConfig(path=data / f"beat-{n}.sqlite3"),
            project=ProjectConfig(id="beat", data_dir=data / f"beat-{n}"),
            triggers=(beat,),
        )
        gateways.append(await start_gateway(config, environ={}))
    try:
        began = time.time()
        await asyncio.sleep(seconds)
        ended = time.time()
        await asyncio.sleep(1.0)  # the last tick's job has run
        assert gateways[0].jobs is not None
        jobs = [j for j in await gateways[0].jobs.store.list("anonymous", None, 1_000_000) if j.trigger]
    finally:
        for gw in gateways:
            await gw.stop(grace=0)
    ticks = [int(j.request_id.removeprefix("tick:")) for j in jobs]
    due = list(range(int(began) + 1, int(ended) + 1))
    late = sorted(
        (float(json.loads(j.result or b"{}")["structured"]) * 1000 - int(j.request_id.removeprefix("tick:")))
        for j in jobs
        if j.status is JobStatus.SUCCEEDED
    )
    return {
        "gateways": 2,
        "seconds": seconds,
        "ticks due": len(due),
        "fired": len(set(due) & {t // 1000 for t in ticks}),
        "fired twice": len(ticks) - len(set(ticks)),
        "missed": len(set(due) - {t // 1000 for t in ticks}),
        "tick to start p50 ms": round(statistics.median(late), 2) if late else None,
        "max ms": round(late[-1], 2) if late else None,
    }


async def run(url: str, args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    await asyncio.sleep(0.5)  # redis-server is listening
    with tempfile.TemporaryDirectory() as tmp:
        rows = [await run_row(url, store, Path(tmp), args) for store in ("redis", "sqlite")]
        beats = [await schedule_row(url, Path(tmp), args.schedule)] if args.schedule else []
    return rows, beats


def table(rows: list[dict[str, Any]]) -> None:
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=int, default=200)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--schedule", type=int, default=60, help="seconds of the schedule row (0: none)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("bench/triggers.py needs redis-server (apt-get install redis-server)")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        rows, beats = asyncio.run(run(url, args))
    finally:
        server.kill()
        server.wait()
    if args.json:
        print(json.dumps({"streams": rows, "schedule": beats}, indent=2))
        return
    table(rows)
    if beats:
        print()
        table(beats)


if __name__ == "__main__":
    main()
