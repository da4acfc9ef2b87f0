"""NATS JetStream and PostgreSQL NOTIFY triggers: message-to-function-start latency, and
JetStream throughput to a no-op function with none lost or doubled.

    PYTHONPATH=. .venv/bin/python bench/triggers_queues.py [--latency N] [--messages N] [--workers W]

A fresh `nats-server -js` and a fresh PostgreSQL 15 (initdb as the `postgres` user; the bench runs
as root) on loopback; per row a gateway in this process (one warm pod of bench/trigger_tools.py),
its jobs in a SQLite file, with a `nats_subject` or a `postgres_channel` trigger. This process
publishes (or NOTIFYs) with its own client.

    latency      --latency messages one at a time, each carrying its send time; the function
                 returns its start time: p50/p99 of start - sent (the same clock)
    throughput   (JetStream) --messages messages published at once; from the first publish until
                 every job has finished: messages/s; then each message must be exactly one job
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import asyncpg  # noqa: E402
import nats  # noqa: E402
from triggers import free_port, table  # noqa: E402

from toolmesh.config import GatewayConfig, MeshConfig, RouterConfig, RuntimeConfig  # noqa: E402
from toolmesh.config.jobs_config import JobsConfig, TriggerConfig  # noqa: E402
from toolmesh.directories import ProjectConfig  # noqa: E402
from toolmesh.gateway.jobs.job import Job, JobStatus  # noqa: E402
from toolmesh.gateway.server import Gateway, start_gateway  # noqa: E402
from toolmesh.gateway.triggers.trigger_service import message_job_id  # noqa: E402

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")


async def gateway(trigger: TriggerConfig, data: Path, workers: int) -> Gateway:
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
        jobs=JobsConfig(path=data / f"jobs-{trigger.name}.sqlite3", workers=workers, max_queued=1_000_000),
        project=ProjectConfig(data_dir=data / trigger.name),
        triggers=(trigger,),
    )
    return await start_gateway(config, environ={})


async def finished_job(gw: Gateway, find: Any) -> Job:
    while True:
        job = await find()
        if job is not None and job.status.finished:
            return job  # type: ignore[no-any-return]
        await asyncio.sleep(0.001)


def delay_ms(job: Job) -> float:
    assert job.status is JobStatus.SUCCEEDED, job
    start = float(json.loads(job.result or b"{}")["structured"])
    return (start - json.loads(job.arguments)["sent"]) * 1000


def latency_columns(delays: list[float]) -> dict[str, Any]:
    delays.sort()
    return {
        "latency p50 ms": round(statistics.median(delays), 2),
        "latency p99 ms": round(delays[min(len(delays) - 1, int(len(delays) * 0.99))], 2),
    }


async def nats_row(url: str, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    trigger = TriggerConfig(name="bench-nats", function="started", nats_url=url, nats_subject="bench")
    gw = await gateway(trigger, data, args.workers)
    nc = await nats.connect(url)
    js = nc.jetstream()
    assert gw.jobs is not None
    store = gw.jobs.store
    try:
        await asyncio.sleep(1.5)  # the stream and the consumer exist, the pod is warm
        delays = []
        for n in range(args.latency + 1):
            ack = await js.publish("bench", json.dumps({"sent": time.time()}).encode())
            job_id = message_job_id(trigger.name, f"{ack.stream}:{ack.seq}")
            job = await finished_job(gw, lambda job_id=job_id: store.get(job_id))
            if n:  # the first warms the path
                delays.append(delay_ms(job))
        began = time.perf_counter()
        acks = await asyncio.gather(
            *(js.publish("bench", json.dumps({"n": n}).encode()) for n in range(args.messages))
        )
        ids = [message_job_id(trigger.name, f"{a.stream}:{a.seq}") for a in acks]
        while True:
            last = await store.get(ids[-1])
            if last is not None and await store.count_active() == 0:
                info = await js.consumer_info(acks[0].stream, gw.triggers.readers[0].durable)  # type: ignore[union-attr,attr-defined]
                if not info.num_pending and not info.num_ack_pending:
                    break
            await asyncio.sleep(0.02)
        seconds = time.perf_counter() - began
        jobs = [j for j in await store.list("anonymous", None, 10_000_000) if b'"n"' in j.arguments]
        ns = [json.loads(j.arguments)["n"] for j in jobs]
        return {
            "source": "nats",
            **latency_columns(delays),
            "messages": args.messages,
            "messages/s": round(args.messages / seconds),
            "succeeded": sum(j.status is JobStatus.SUCCEEDED for j in jobs),
            "lost": args.messages - len(set(ns)),
            "doubled": len(ns) - len(set(ns)),
        }
    finally:
        await nc.close()
        await gw.stop(grace=0)


async def notify_row(url: str, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    trigger = TriggerConfig(
        name="bench-notify", function="started", postgres_url=url, postgres_channel="bench"
    )
    gw = await gateway(trigger, data, args.workers)
    db = await asyncpg.connect(url)
    assert gw.jobs is not None
    store = gw.jobs.store
    try:
        await asyncio.sleep(2.0)  # it holds the lease and listens, the pod is warm
        delays = []
        for n in range(args.latency + 1):
            sent = time.time()
            await db.execute("SELECT pg_notify('bench', $1)", json.dumps({"sent": sent}))
            marker = json.dumps(sent).encode()

            async def find(marker: bytes = marker) -> Job | None:
                jobs = await store.list("anonymous", None, 3)
                return next((j for j in jobs if marker in j.arguments), None)

            job = await finished_job(gw, find)
            if n:
                delays.append(delay_ms(job))
        # NOTIFY has no throughput row: it is not a queue (nothing kept for a listener that lags).
        return {"source": "notify", **latency_columns(delays), "messages": "-", "messages/s": "-"}
    finally:
        await db.close()
        await gw.stop(grace=0)


class Postgres:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="tm-bench-pg-"))
        user = pwd.getpwnam("postgres")
        os.chown(self.directory, user.pw_uid, user.pw_gid)
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, *command: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, stdout=subprocess.DEVNULL)

    def __enter__(self) -> Postgres:
        data = str(self.directory / "data")
        self.run(str(POSTGRES_BIN / "initdb"), "-D", data, "-A", "trust", "-U", "postgres")
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.run(str(POSTGRES_BIN / "pg_ctl"), "-D", data, "-o", options, "-w", "start")
        return self

    def __exit__(self, *_: object) -> None:
        self.run(str(POSTGRES_BIN / "pg_ctl"), "-D", str(self.directory / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)


async def run(nats_url: str, postgres_url: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        return [await nats_row(nats_url, Path(tmp), args), await notify_row(postgres_url, Path(tmp), args)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=int, default=200)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    binary = shutil.which("nats-server")
    if binary is None or not (POSTGRES_BIN / "initdb").exists():
        sys.exit(
            "bench/triggers_queues.py needs nats-server and PostgreSQL 15"
            " (apt-get install nats-server postgresql-15)"
        )
    port = free_port()
    with tempfile.TemporaryDirectory() as store:
        server = subprocess.Popen(
            [binary, "-js", "-sd", store, "-a", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.5)
            with Postgres() as postgres:
                rows = asyncio.run(run(f"nats://127.0.0.1:{port}", postgres.url, args))
        finally:
            server.kill()
            server.wait()
    table([{column: row.get(column, "-") for column in rows[0]} for row in rows])


if __name__ == "__main__":
    main()
