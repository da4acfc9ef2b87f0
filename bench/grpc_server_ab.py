"""CPU per call of bare gRPC servers (bench/grpc_variants.py), side by side, round after round.

    PYTHONPATH=$PWD .venv/bin/python bench/grpc_server_ab.py [--rounds 3] [--requests 8000] [--gateway]

Issue #31 asks for Mesh/Invoke within 1.5x of the HTTP invoke's CPU, and a bare grpc.aio
servicer answering a constant already costs about the HTTP invoke's: this measures the other
ways of serving gRPC from Python that could be cheaper. Every server runs at once and each is
measured in turn, `--rounds` times, with cpu_per_call.py's loads and CPU accounting (h2load, one
HTTP/2 connection with C streams in flight; the serving process's user + system CPU); with
`--gateway`, the gateway's own Mesh/Invoke and HTTP invoke join every round.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from cpu_per_call import (
    BENCH,
    GRPC_HEADERS,
    HOST,
    JSON_HEADERS,
    ROOT,
    Load,
    grpc_frame,
    measure,
    noop_gateway,
    started,
)

#: (key, variant of grpc_variants.py, extra environment)
TARGETS: list[tuple[str, str, dict[str, str]]] = [
    ("aio", "aio", {}),
    ("aio-bare", "aio-bare", {}),
    ("aio-bytes", "aio-bytes", {}),
    ("aio-asyncio", "aio-asyncio", {}),
    ("aio-poll", "aio", {"GRPC_POLL_STRATEGY": "poll"}),
    ("aio-lowat", "aio", {"GRPC_EXPERIMENTS": "tcp_rcv_lowat,tcp_frame_size_tuning"}),
    ("aio-ph2", "aio", {"GRPC_EXPERIMENTS": "ph2_server"}),
    ("aio-fuse", "aio", {"GRPC_EXPERIMENTS": "fuse_filters,prioritize_finished_requests"}),
    ("aio-minimal", "aio", {"BENCH_GRPC_OPTIONS": '[["grpc.minimal_stack", 1]]'}),
    ("aio-thruput", "aio", {"BENCH_GRPC_OPTIONS": '[["grpc.optimization_target", "throughput"]]'}),
    ("sync", "sync", {}),
    ("sync-bytes", "sync-bytes", {}),
    ("grpclib", "grpclib", {}),
    ("h2", "h2", {}),
    ("h2-task", "h2-task", {}),
]

#: Variants on packages installed apart (`--h2-path`); left out without it.
PURE_PYTHON = ("grpclib", "h2", "h2-task")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=8000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--h2-path", default="", help="where `h2` and `grpclib` are (pip install --target)")
    parser.add_argument("--only", nargs="*", help="these targets only (keys of TARGETS)")
    parser.add_argument(
        "--gateway", action="store_true", help="also the gateway's Mesh/Invoke and HTTP invoke"
    )
    args = parser.parse_args()
    python = sys.executable
    chosen = [t for t in TARGETS if not args.only or t[0] in args.only]
    if not args.h2_path:  # h2 and grpclib are not project dependencies
        chosen = [t for t in chosen if t[1] not in PURE_PYTHON]
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        loads: dict[str, tuple[int, Load]] = {}
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for key, variant, extra in chosen:
            command = [python, str(BENCH / "grpc_variants.py"), "--variant", variant]
            if variant in PURE_PYTHON:
                extra = {**extra, "PYTHONPATH": f"{ROOT}:{args.h2_path}"}
            pid, ports = stack.enter_context(started(command, {**env, **extra}, work / f"{key}.err"))
            url = f"http://{HOST}:{ports['grpc_port']}/toolmesh.v1.Mesh/Invoke"
            loads[key] = (pid, Load(key, key, url, grpc_frame("noop"), GRPC_HEADERS, grpc=True))
        if args.gateway:
            up = noop_gateway(work)
            pid, ports = stack.enter_context(started(up, env, work / "gateway.err"))
            url = f"http://{HOST}:{ports['grpc_port']}/toolmesh.v1.Mesh/Invoke"
            loads["gateway grpc"] = (
                pid,
                Load("gw_grpc", "", url, grpc_frame("noop"), GRPC_HEADERS, grpc=True),
            )
            url = f"http://{HOST}:{ports['http_port']}/v1/functions/noop/invoke"
            loads["gateway http"] = (pid, Load("gw_http", "", url, b"{}", JSON_HEADERS))
        figures: dict[str, list[float]] = {key: [] for key in loads}
        rates: dict[str, list[float]] = {key: [] for key in loads}
        print(f"{args.requests} calls per measure, {args.clients} in flight; server CPU µs per call\n")
        print(f"{'round':>5} " + " ".join(f"{key:>12}" for key in loads))
        for round_ in range(1, args.rounds + 1):
            for key, (pid, load) in loads.items():
                measured = measure(load, pid, args.requests, args.clients, work)
                figures[key].append(measured.gateway_us)
                rates[key].append(measured.rps)
            print(f"{round_:>5} " + " ".join(f"{figures[key][-1]:12.1f}" for key in loads))
        medians = {key: statistics.median(values) for key, values in figures.items()}
        print(f"{'median':>5} " + " ".join(f"{medians[key]:12.1f}" for key in loads))
        print(f"{'req/s':>5} " + " ".join(f"{statistics.median(rates[key]):12.0f}" for key in loads))
        base = medians[next(iter(loads))]
        print(f"{'/ ' + next(iter(loads)):>5} " + " ".join(f"{medians[key] / base:12.2f}" for key in loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
