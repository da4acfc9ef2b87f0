"""Asynchronous calls (jobs on SQLite, and on Redis) next to a synchronous invoke of the same
no-op function.

    .venv/bin/python bench/async_jobs.py [--jobs N] [--latency-jobs N] [--workers W]
                                         [--store sqlite|redis|both] [--json]

One `toolmesh up` per store (one warm pod of bench/noop_tools.py; jobs in a fresh SQLite file,
or in a fresh `redis-server` on loopback through TOOLMESH_STATE_URL) and, in this process, an
httpx client and a callback receiver (Starlette on uvicorn, loopback). Rows, per store:

    (a) sync invoke          POST /v1/functions/noop/invoke: the answer is the result
    (b) async, callback      submit (Prefer: respond-async + X-Callback-Url) -> the signed callback
                             arrives at the receiver: submit-to-result
    (c) async, polling       submit -> GET /v1/jobs/{id} every 2 ms until it is finished

Latency: one call at a time (p50/p99 of --latency-jobs). Throughput: --jobs calls with 16
in flight; for (b) from the first submit until the last callback has arrived (jobs/s), and
the submit rate alone (202s/s). Client, gateway and pod share the machine's cores.
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
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SECRET_ENV = "TOOLMESH_BENCH_CALLBACK_SECRET"
CONCURRENCY = 16
ASYNC = {"Prefer": "respond-async"}


class Receiver:
    """Callbacks by job id, each waking whoever waits for it."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.waiting: dict[str, asyncio.Future[float]] = {}
        self.count = 0
        self.all_done = asyncio.Event()
        self.expected = 0

    async def hook(self, request: Request) -> Response:
        job_id = request.headers["x-toolmesh-job-id"]
        await request.body()
        now = time.perf_counter()
        if job_id not in self.arrived:
            self.arrived[job_id] = now
            self.count += 1
            future = self.waiting.pop(job_id, None)
            if future is not None and not future.done():
                future.set_result(now)
            if self.expected and self.count >= self.expected:
                self.all_done.set()
        return Response(status_code=204)

    def wait(self, job_id: str) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if job_id in self.arrived:
            future.set_result(self.arrived[job_id])
        else:
            self.waiting[job_id] = future
        return future


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99)] * 1000


async def sync_call(http: httpx.AsyncClient) -> None:
    response = await http.post("/v1/functions/noop/invoke", json={})
    assert response.status_code == 200 and response.json()["is_error"] is False, response.text


async def submit(http: httpx.AsyncClient, callback: str | None) -> str:
    headers = ASYNC if callback is None else {**ASYNC, "X-Callback-Url": callback}
    response = await http.post("/v1/functions/noop/invoke", json={}, headers=headers)
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


async def polled(http: httpx.AsyncClient) -> None:
    job_id = await submit(http, None)
    while True:
        document = (await http.get(f"/v1/jobs/{job_id}")).json()
        if document["status"] not in ("queued", "running"):
            assert document["status"] == "succeeded", document
            return
        await asyncio.sleep(0.002)


async def timed(calls: int, one: Any) -> list[float]:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await one()
        samples.append(time.perf_counter() - started)
    return samples


async def flood(calls: int, one: Any) -> float:
    """Calls per second with CONCURRENCY in flight."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def limited() -> None:
        async with gate:
            await one()

    started = time.perf_counter()
    await asyncio.gather(*(limited() for _ in range(calls)))
    return calls / (time.perf_counter() - started)


async def bench(http_port: int, args: argparse.Namespace) -> dict[str, Any]:
    receiver = Receiver()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    hook_url = f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    app = Starlette(routes=[Route("/hook", receiver.hook, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
        await asyncio.sleep(0.01)
    # Idle connections are dropped before uvicorn's 5 s keep-alive ends them under the client.
    limits = httpx.Limits(max_connections=CONCURRENCY * 2, keepalive_expiry=1.0)
    results: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{http_port}", timeout=60, limits=limits) as http:
        for _ in range(50):  # warm-up: connections, the pod, SQLite's pages
            await sync_call(http)
            await receiver.wait(await submit(http, hook_url))

        async def by_callback() -> None:
            await receiver.wait(await submit(http, hook_url))

        n = args.latency_jobs
        results["sync"] = {"latency": percentiles(await timed(n, lambda: sync_call(http)))}
        results["callback"] = {"latency": percentiles(await timed(n, by_callback))}
        results["polling"] = {"latency": percentiles(await timed(n, lambda: polled(http)))}

        results["sync"]["rate"] = await flood(args.jobs, lambda: sync_call(http))
        receiver.expected, receiver.count = args.jobs, 0
        receiver.all_done.clear()
        started = time.perf_counter()
        submits = await flood(args.jobs, lambda: submit(http, hook_url))
        await asyncio.wait_for(receiver.all_done.wait(), 600)
        results["callback"]["rate"] = args.jobs / (time.perf_counter() - started)
        results["callback"]["submit_rate"] = submits
        results["polling"]["rate"] = await flood(args.jobs // 4, lambda: polled(http))
    server.should_exit = True
    await serving
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000, help="calls per throughput run")
    parser.add_argument("--latency-jobs", type=int, default=300, help="calls per latency run")
    parser.add_argument("--workers", type=int, default=4, help="[jobs] workers")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--store", choices=("sqlite", "redis", "both"), default="both")
    args = parser.parse_args()
    stores = ("sqlite", "redis") if args.store == "both" else (args.store,)
    if args.store == "both" and shutil.which("redis-server") is None:
        print("redis-server is not installed: SQLite only", file=sys.stderr)
        stores = ("sqlite",)
    results = {store: run(store, args) for store in stores}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'':34} {'p50 ms':>8} {'p99 ms':>8} {'rate (16 in flight)':>22}")
    for store, measured in results.items():
        rows = [
            ("(a) sync invoke", measured["sync"], "calls/s"),
            ("(b) async, callback", measured["callback"], "jobs/s"),
            ("(c) async, polling 2 ms", measured["polling"], "jobs/s"),
        ]
        for label, row, unit in rows:
            p50, p99 = row["latency"]
            print(f"{store + ': ' + label:34} {p50:8.2f} {p99:8.2f} {row['rate']:14.0f} {unit}")
        print(f"{'':34} submits alone (202s): {measured['callback']['submit_rate']:.0f}/s")
        ratio = measured["callback"]["latency"][0] / measured["sync"]["latency"][0]
        print(f"{store}: async submit-to-callback p50 = {ratio:.1f}x the sync call's")
    return 0


def run(store: str, args: argparse.Namespace) -> dict[str, Any]:
    """One gateway with its jobs in `store`, measured."""
    with tempfile.TemporaryDirectory(prefix="tm-") as tmp:
        config = Path(tmp) / "toolmesh.toml"
        config.write_text(
            "[gateway]\nhttp_port = 0\ngrpc_port = 0\naccess_log = false\n\n"
            '[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
            f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n\n'
            f'[jobs]\npath = "{tmp}/jobs.sqlite3"\nworkers = {args.workers}\n'
            f'callback_secret_env = "{SECRET_ENV}"\ncallback_backoff = 0.05\n'
            'callback_hosts = ["127.0.0.1"]\n\n'
            "[router]\nenabled = false\n"
        )
        env = {**os.environ, SECRET_ENV: "bench-secret", "TMPDIR": tmp}
        redis = None
        if store == "redis":
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            redis = subprocess.Popen(
                [
                    "redis-server",
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
                stdout=subprocess.DEVNULL,
                cwd=tmp,
            )
            time.sleep(0.5)
            env["TOOLMESH_STATE_URL"] = f"redis://127.0.0.1:{port}/0"
        try:
            with open(Path(tmp) / "gateway.err", "w") as err:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "toolmesh",
                        "up",
                        "--config",
                        str(config),
                        "--log-level",
                        "warning",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env=env,
                    cwd=ROOT,
                )
                try:
                    assert process.stdout is not None
                    ready = json.loads(process.stdout.readline())
                    return asyncio.run(bench(ready["http_port"], args))
                finally:
                    process.terminate()
                    process.wait(30)
        finally:
            if redis is not None:
                redis.terminate()
                redis.wait(30)


if __name__ == "__main__":
    sys.exit(main())
