"""A no-op call through the gateway, side by side with the pod and a plain Starlette app.

    .venv/bin/python bench/gateway_invoke.py [--requests N] [--rounds R] [--json]

Targets, all on loopback and all driven by h2load (HTTP/1.1 for the HTTP ones,
HTTP/2 with gRPC framing for the gRPC ones):

    (a) gateway HTTP   POST /v1/functions/noop/invoke on `toolmesh up`
    (b) gateway gRPC   toolmesh.v1.Mesh/Invoke on the same gateway
    (c) pod direct     toolmesh.v1.Runtime/Invoke on a pod of the same module started with
                       `toolmesh runtime` on a loopback port (the gateway's own pods listen on
                       Unix sockets only, which h2load cannot reach)
    (d) plain Starlette  a bare Starlette route on uvicorn returning the same JSON

Latency is measured one request at a time; throughput with 16 in flight (16
HTTP/1.1 connections, or 16 streams on one HTTP/2 connection as a gRPC channel
would use). The gateway, its pod and h2load share the machine's cores: nothing
is pinned, because the gateway path needs two processes to work at once.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolmesh.v1 import invoke_pb2

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
HOST = "127.0.0.1"
HTTP_HEADERS = ["content-type: application/json"]
GRPC_HEADERS = ["content-type: application/grpc", "te: trailers"]
TIMEOUT = 300


@dataclass
class Target:
    key: str
    label: str
    url: str
    body: bytes
    grpc: bool


@dataclass
class Run:
    rps: float
    p50_us: float
    p99_us: float


def grpc_frame(function: str) -> bytes:
    message = invoke_pb2.InvokeRequest(function=function, arguments=b"{}").SerializeToString()
    return b"\x00" + len(message).to_bytes(4, "big") + message


def h2load(target: Target, requests: int, concurrency: int, workdir: Path, extra: Sequence[str] = ()) -> Run:
    """One bounded run; fails unless every request got HTTP 200. `extra`: more headers."""
    body = workdir / f"{target.key}.body"
    body.write_bytes(target.body)
    log = workdir / f"{target.key}.log"
    log.unlink(missing_ok=True)
    command = [shutil.which("h2load") or "h2load", "-n", str(requests), "-t", "1", "-d", str(body)]
    command += ["--log-file", str(log)]
    if target.grpc:
        command += ["-c", "1", "-m", str(concurrency)]
        headers = GRPC_HEADERS
    else:
        command += ["--h1", "-c", str(concurrency), "-m", "1"]
        headers = HTTP_HEADERS
    command += [arg for header in (*headers, *extra) for arg in ("-H", header)]
    command.append(target.url)
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    finished = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", done.stdout)
    rows = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    if done.returncode != 0 or finished is None or len(rows) != requests or any(r[1] != "200" for r in rows):
        raise RuntimeError(f"h2load against {target.label} failed:\n{done.stdout}\n{done.stderr}")
    latencies = sorted(float(row[2]) for row in rows)
    return Run(float(finished[3]), latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)])


def _ready_line(process: subprocess.Popen[str]) -> dict[str, int]:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"{process.args!r} exited before it was ready")
    ready: dict[str, int] = json.loads(line)
    return ready


@contextlib.contextmanager
def started(
    command: list[str], env: dict[str, str], stderr: Path, cwd: Path = ROOT
) -> Iterator[subprocess.Popen[str]]:
    with stderr.open("w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=cwd)
        try:
            yield process
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {HOST}:{port}")


def check_http(url: str, expected: dict[str, object]) -> None:
    request = urllib.request.Request(
        url, data=b"{}", method="POST", headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    for key, value in expected.items():
        if answer.get(key) != value:
            raise RuntimeError(f"{url} answered {answer}, expected {key}={value!r}")


def measure(
    targets: list[Target], requests: int, workdir: Path, results: dict[str, list[tuple[Run, Run]]]
) -> None:
    for target in targets:
        h2load(target, max(requests // 5, 500), 16, workdir)  # warm-up
        latency = h2load(target, requests, 1, workdir)
        throughput = h2load(target, requests, 16, workdir)
        results.setdefault(target.key, []).append((latency, throughput))


def run_round(requests: int, workdir: Path, results: dict[str, list[tuple[Run, Run]]]) -> list[Target]:
    config = workdir / "toolmesh.toml"
    config.write_text(
        '[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
        # One pod from the start, measured directly as (c); per-call logs on, as in production.
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )
    env = dict(os.environ)
    gateway_log = workdir / "gateway.err"
    python = sys.executable
    with started([python, "-m", "toolmesh", "up", "--config", str(config)], env, gateway_log) as gateway:
        ports = _ready_line(gateway)
        http = f"http://{HOST}:{ports['http_port']}"
        check_http(f"{http}/v1/functions/noop/invoke", {"is_error": False, "content": []})
        targets = [
            Target("gateway_http", "(a) gateway HTTP", f"{http}/v1/functions/noop/invoke", b"{}", grpc=False),
            Target(
                "gateway_grpc",
                "(b) gateway gRPC",
                f"http://{HOST}:{ports['grpc_port']}/toolmesh.v1.Mesh/Invoke",
                grpc_frame("noop"),
                grpc=True,
            ),
        ]
        measure(targets, requests, workdir, results)
    pod_port = free_port()
    pod_command = [python, "-m", "toolmesh", "runtime", "--module", "noop_tools", "--port", str(pod_port)]
    pod_env = {**env, "PYTHONPATH": str(BENCH)}
    with started([*pod_command, "--metrics-port", "-1"], pod_env, workdir / "pod.err"):
        wait_for_port(pod_port)
        pod_url = f"http://{HOST}:{pod_port}/toolmesh.v1.Runtime/Invoke"
        targets.append(Target("pod", "(c) pod direct", pod_url, grpc_frame("noop"), grpc=True))
        measure(targets[-1:], requests, workdir, results)
    plain_log = workdir / "plain.err"
    with started([python, str(BENCH / "plain_starlette.py")], env, plain_log) as plain:
        port = _ready_line(plain)["http_port"]
        url = f"http://{HOST}:{port}/v1/functions/noop/invoke"
        check_http(url, {"is_error": False, "content": []})
        plain_target = Target("plain", "(d) plain Starlette", url, b"{}", grpc=False)
        measure([plain_target], requests, workdir, results)
    return [*targets, plain_target]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000, help="requests per measured run")
    parser.add_argument("--rounds", type=int, default=2, help="passes over all targets (medians are shown)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if shutil.which("h2load") is None:
        print("h2load is missing: apt-get install nghttp2-client", file=sys.stderr)
        return 2
    results: dict[str, list[tuple[Run, Run]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            targets = run_round(args.requests, Path(tmp), results)

    def median(key: str, pick: str, which: int) -> float:
        return float(statistics.median(getattr(runs[which], pick) for runs in results[key]))

    rows: dict[str, dict[str, Any]] = {
        t.key: {
            "label": t.label,
            "p50_c1_us": median(t.key, "p50_us", 0),
            "p99_c1_us": median(t.key, "p99_us", 0),
            "rps_c16": median(t.key, "rps", 1),
            "p50_c16_us": median(t.key, "p50_us", 1),
        }
        for t in targets
    }
    latency_budget = rows["pod"]["p50_c1_us"] + rows["plain"]["p50_c1_us"]
    checks = {
        "a_latency_vs_c_plus_d": rows["gateway_http"]["p50_c1_us"] / latency_budget,
        "a_throughput_vs_c": rows["gateway_http"]["rps_c16"] / rows["pod"]["rps_c16"],
    }
    if args.json:
        print(json.dumps({"rows": rows, "checks": checks, "cpus": os.cpu_count()}, indent=2))
        return 0
    print(f"cpus {os.cpu_count()}, {args.requests} requests per run, median of {args.rounds} rounds\n")
    print(f"{'target':22} {'p50 c1 µs':>10} {'p99 c1 µs':>10} {'req/s c16':>10} {'p50 c16 µs':>11}")
    for row in rows.values():
        print(
            f"{row['label']:22} {row['p50_c1_us']:10.0f} {row['p99_c1_us']:10.0f} "
            f"{row['rps_c16']:10.0f} {row['p50_c16_us']:11.0f}"
        )
    print(
        f"\n(a) p50 latency at c1 / ((c) + (d)): {checks['a_latency_vs_c_plus_d']:.2f}  (target <= 1.10)"
        f"\n(a) throughput at c16 / (c):         {checks['a_throughput_vs_c']:.2f}  (target >= 0.80)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
