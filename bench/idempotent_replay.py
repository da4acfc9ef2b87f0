"""What a keyed call's repeat costs the gateway: its stored outcome answered, nothing run.

    .venv/bin/python bench/idempotent_replay.py [--requests N] [--clients C] [--rounds R]

`toolmesh up` serving bench/noop_tools.py with one warm pod, once with keyed outcomes in the
project's SQLite file (no [state]) and once in a redis-server this script starts on a free
loopback port (TOOLMESH_STATE_URL). Per gateway, by h2load, `POST /v1/functions/noop/invoke`:

    unkeyed           no Idempotency-Key: every request runs the function in its pod
    keyed repeat      one Idempotency-Key, already run once: every request is a replay

The gateway process's CPU (utime + stime from /proc/<pid>/stat, its pods excluded) before and
after each run, divided by the requests that succeeded: CPU, not wall time, so a busy shared
machine moves it little. Rounds alternate the two; medians are shown. Target: a keyed repeat
under 1 ms of gateway CPU. Needs h2load and redis-server.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
TARGET_US = 1000.0
KEY = "bench-replay-key"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server") or sys.exit("redis-server is not installed")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.02)
    process.kill()
    sys.exit("redis-server did not start")


def start_gateway(work: Path, url: str | None) -> tuple[subprocess.Popen[str], int]:
    config = work / "toolmesh.toml"
    config.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\naccess_log = false\n[router]\nenabled = false\n"
        '[jobs]\nenabled = false\n[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "TOOLMESH_STATE_URL"}
    if url is not None:
        env["TOOLMESH_STATE_URL"] = url
    process = subprocess.Popen(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=(work / "gateway.err").open("w"),
        text=True,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        sys.exit(f"toolmesh up exited: see {work / 'gateway.err'}")
    return process, int(json.loads(line)["http_port"])


def h2load(url: str, requests: int, clients: int, body: Path, headers: list[str]) -> int:
    """Requests answered 2xx."""
    extra = [arg for header in headers for arg in ("-H", header)]
    command = ["h2load", "--h1", "-n", str(requests), "-c", str(clients), "-d", str(body)]
    out = subprocess.run(
        [*command, "-H", "content-type: application/json", *extra, url], capture_output=True, text=True
    ).stdout
    # Answered 2xx: a refusal would cost less and flatter the number.
    found = re.search(r"status codes: (\d+) 2xx", out)
    return int(found.group(1)) if found else 0


def measure(pid: int, url: str, requests: int, clients: int, body: Path, headers: list[str]) -> float:
    """Gateway CPU microseconds per successful request."""
    before = cpu_seconds(pid)
    ok = h2load(url, requests, clients, body, headers)
    return 1e6 * (cpu_seconds(pid) - before) / max(ok, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shutil.which("h2load") or sys.exit("h2load is not installed (apt-get install nghttp2-client)")
    rows: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="tm-replay-") as scratch:
        work = Path(scratch)
        redis, redis_url = start_redis(work)
        body = work / "body.json"
        body.write_text("{}")
        try:
            for store, url in (("sqlite", None), ("redis", redis_url)):
                directory = work / store
                directory.mkdir()
                gateway, port = start_gateway(directory, url)
                try:
                    invoke = f"http://127.0.0.1:{port}/v1/functions/noop/invoke"
                    first = urllib.request.Request(
                        invoke, b"{}", {"Content-Type": "application/json", "Idempotency-Key": KEY}
                    )
                    urllib.request.urlopen(first, timeout=10).read()
                    keyed = [f"idempotency-key: {KEY}"]
                    h2load(invoke, 1000, args.clients, body, [])  # warm up both paths
                    h2load(invoke, 1000, args.clients, body, keyed)
                    found = rows.setdefault(store, {"unkeyed": [], "keyed repeat": []})
                    for round_ in range(args.rounds):
                        order = [("unkeyed", []), ("keyed repeat", keyed)]
                        for name, headers in order if round_ % 2 == 0 else order[::-1]:
                            us = measure(gateway.pid, invoke, args.requests, args.clients, body, headers)
                            found[name].append(us)
                finally:
                    os.killpg(gateway.pid, signal.SIGTERM)
                    gateway.wait(30)
        finally:
            redis.kill()
            redis.wait(10)
    print(f"\n{args.requests} requests x {args.rounds} rounds, {args.clients} clients (h2load, HTTP/1.1)\n")
    print("| store | unkeyed: gateway CPU per call | keyed repeat: gateway CPU per call | target |")
    print("|---|---|---|---|")
    for store, found in rows.items():
        unkeyed, repeat = statistics.median(found["unkeyed"]), statistics.median(found["keyed repeat"])
        verdict = "met" if repeat < TARGET_US else "MISSED"
        print(f"| {store} | {unkeyed:.0f} µs | {repeat:.0f} µs | < {TARGET_US:.0f} µs: {verdict} |")


if __name__ == "__main__":
    main()
