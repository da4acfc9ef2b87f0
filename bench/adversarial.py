"""Adversarial: how a legitimate client fares (`/healthz` latency and failures) while hostile
clients run, next to the same figure without them, in one run.

    .venv/bin/python bench/adversarial.py [--seconds 10] [--json]

`toolmesh up` runs as a real subprocess serving examples/arithmetic with two API keys (one
unlimited, one limited to 5 calls/s), under a file limit of FILE_LIMIT (the common default soft
limit), so the derived HTTP connection cap is half of it. For each scenario a probe opens a new
connection every PROBE_EVERY s and GETs /healthz (5 s timeout, a failure otherwise) for --seconds,
while the hostile load runs in a process of its own (so that its CPU use shows in the gateway,
not in the probe's interpreter):

  baseline     nothing else
  slowloris    TRICKLERS connections sending a request head a byte a second, each reopened as
               soon as the gateway closes it (more than the whole file limit)
  huge-prompt  PROMPT_CLIENTS clients POSTing /v1/execute {"prompt": "what is 2 plus 2 " * 4000,
               "dry_run": true} back to back
  worst-prompt PROMPT_CLIENTS clients POSTing the longest prompt accepted (8,000 characters of
               "2 ", extraction's worst case: every number weighed for every parameter), dry run
  flood        FLOOD_CLIENTS clients POSTing /v1/tool_calls batches of 64 `add` calls with the
               rate-limited key, back to back

Printed: one table, a row per scenario: probes, failures, p50/p99/max latency of the probes,
how long after the load stopped /healthz answered within 1 s again (the next scenario waits for
it), and what the hostile clients got (requests and their HTTP statuses, or connections opened).
Everything stays on 127.0.0.1; every loop is bounded in time.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FILE_LIMIT = 1024
TRICKLERS = 1500
PROMPT_CLIENTS = 4
FLOOD_CLIENTS = 8
PROBE_EVERY = 0.05
#: Longest wait for the gateway to answer again after a hostile load stops.
RECOVERY_LIMIT = 180.0
KEY = "adversarial-bench-key"
FLOOD_KEY = "adversarial-flood-key"
PROMPT = {"prompt": "what is 2 plus 2 " * 4000, "dry_run": True}
WORST_PROMPT = {"prompt": ("what is 2 plus " + "2 " * 4000)[:8000], "dry_run": True}
BATCH = [{"name": "add", "arguments": {"a": 2, "b": 2}}] * 64


def config(workdir: Path) -> Path:
    from toolmesh.config import hash_key

    path = workdir / "toolmesh.toml"
    path.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n"
        f'[[keys]]\nname = "bench"\nkey_hash = "{hash_key(KEY)}"\n'
        f'[[keys]]\nname = "flood"\nkey_hash = "{hash_key(FLOOD_KEY)}"\nrate = 5\nburst = 10\n'
        '[[runtimes]]\nname = "arithmetic"\nmodules = ["examples.arithmetic"]\nmin_replicas = 1\n'
        f'log_level = "warning"\nenv = {{ PYTHONPATH = "{ROOT}" }}\n'
        # Any best candidate is a match, so every prompt, however odd, goes on to extraction.
        "[router]\nthreshold = -1.0\n"
    )
    return path


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@contextlib.contextmanager
def gateway(workdir: Path) -> Iterator[int]:
    with (workdir / "gateway.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolmesh", "up", "--config", str(config(workdir))],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(workdir)},
            preexec_fn=_limit_files,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the gateway did not start; see {workdir / 'gateway.log'}")
        yield int(json.loads(line)["http_port"])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def post(port: int, path: str, body: object, key: str, timeout: float = 30) -> int:
    """The HTTP status of one POST on a new connection (0: no answer)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        connection.request("POST", path, body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        connection.close()


def wait_ready(port: int, timeout: float = 120) -> None:
    """Until a pod serves and the router answers (a missing model is built in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if post(port, "/v1/execute", {"prompt": "what is 2 plus 2", "dry_run": True}, KEY) == 200:
            return
        time.sleep(0.5)
    raise RuntimeError("the gateway's router did not become ready")


# -- hostile loads, each in a process of its own ---------------------------------------------


def slowloris(port: int, stop: Event, out: dict[str, Any]) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100_000
    opened = 0

    def connect() -> tuple[socket.socket | None, int]:
        nonlocal opened
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            return None, 0
        sock.setblocking(False)
        opened += 1
        return sock, 0

    socks = [connect() for _ in range(TRICKLERS)]
    while not stop.wait(1.0):
        for i, (sock, sent) in enumerate(socks):
            if sock is None:
                socks[i] = connect()
                continue
            try:
                sock.send(head[sent : sent + 1])
                socks[i] = (sock, sent + 1)
                if sock.recv(1024) == b"":
                    raise ConnectionResetError
            except BlockingIOError:
                pass
            except OSError:
                sock.close()
                socks[i] = connect()
    for sock, _ in socks:
        if sock is not None:
            sock.close()
    out["hostile"] = f"{TRICKLERS} tricklers, {opened} connections opened"


def _hammer(port: int, stop: Event, out: dict[str, Any], clients: int, send: Callable[[], int]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    statuses: Counter[int] = Counter()

    def client() -> None:
        while not stop.is_set():
            statuses[send()] += 1

    with ThreadPoolExecutor(clients) as pool:
        for _ in range(clients):
            pool.submit(client)
    shown = ", ".join(f"{status or 'no answer'}: {count}" for status, count in sorted(statuses.items()))
    out["hostile"] = f"{sum(statuses.values())} requests: {shown}"


def huge_prompt(port: int, stop: Event, out: dict[str, Any]) -> None:
    _hammer(port, stop, out, PROMPT_CLIENTS, lambda: post(port, "/v1/execute", PROMPT, KEY))


def worst_prompt(port: int, stop: Event, out: dict[str, Any]) -> None:
    _hammer(port, stop, out, PROMPT_CLIENTS, lambda: post(port, "/v1/execute", WORST_PROMPT, KEY))


def flood(port: int, stop: Event, out: dict[str, Any]) -> None:
    _hammer(port, stop, out, FLOOD_CLIENTS, lambda: post(port, "/v1/tool_calls", BATCH, FLOOD_KEY))


SCENARIOS: dict[str, Callable[[int, Event, dict[str, Any]], None] | None] = {
    "baseline": None,
    "slowloris": slowloris,
    "huge-prompt": huge_prompt,
    "worst-prompt": worst_prompt,
    "flood": flood,
}


# -- the probe --------------------------------------------------------------------------------


def probe(port: int, seconds: float) -> tuple[list[float], int]:
    """/healthz on a new connection every PROBE_EVERY s: latencies in ms of the answered ones,
    and the number that failed (no 200 within 5 s)."""
    latencies: list[float] = []
    failures = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.perf_counter()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            connection.close()
            if response.status == 200:
                latencies.append((time.perf_counter() - start) * 1000)
            else:
                failures += 1
        except OSError:
            failures += 1
        time.sleep(max(0.0, PROBE_EVERY - (time.perf_counter() - start)))
    return latencies, failures


def recover(port: int, limit: float = RECOVERY_LIMIT) -> float:
    """Seconds after the hostile load stopped until /healthz answers within 1 s again, so that
    one scenario's backlog does not spill into the next (`limit` at most)."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.2)
    return float("inf")


def run(name: str, port: int, seconds: float) -> dict[str, Any]:
    load = SCENARIOS[name]
    manager = multiprocessing.Manager()
    out = manager.dict()
    stop = multiprocessing.Event()
    hostile = None
    if load is not None:
        hostile = multiprocessing.Process(target=load, args=(port, stop, out), daemon=True)
        hostile.start()
        time.sleep(1.0)  # let the load build up before measuring
    latencies, failures = probe(port, seconds)
    stop.set()
    recovery = 0.0
    if hostile is not None:
        hostile.join(30)
        recovery = recover(port)
    ordered = sorted(latencies) or [float("nan")]
    row = {
        "scenario": name,
        "probes": len(latencies) + failures,
        "failures": failures,
        "p50_ms": statistics.median(ordered),
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max_ms": ordered[-1],
        "hostile": out.get("hostile", "none"),
        "recovery_s": recovery,
    }
    manager.shutdown()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="probe seconds per scenario")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolmesh-adversarial-") as tmp, gateway(Path(tmp)) as port:
        wait_ready(port)
        rows = [run(name, port, args.seconds) for name in SCENARIOS]
        log = (Path(tmp) / "gateway.log").read_text().splitlines()
    warnings = [line for line in log if "slowloris" in line]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{args.seconds:g} s per scenario, gateway file limit {FILE_LIMIT}, cpus {os.cpu_count()}")
    print()
    print(
        "| scenario | /healthz probes | failures | p50 ms | p99 ms | max ms "
        "| answers again after, s | hostile clients got |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['scenario']} | {row['probes']} | {row['failures']} | {row['p50_ms']:.1f} "
            f"| {row['p99_ms']:.1f} | {row['max_ms']:.1f} | {row['recovery_s']:.1f} | {row['hostile']} |"
        )
    print()
    print(f"gateway warnings about held connections: {len(warnings)}")
    for line in warnings[:1]:
        print(f"  first: {json.loads(line)['msg'] if line.startswith('{') else line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
