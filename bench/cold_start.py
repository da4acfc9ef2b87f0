"""Cold starts: a call for a runtime with no pod running, until its answer arrives.

    .venv/bin/python bench/cold_start.py [--starts 20] [--json]

Two gateways run side by side (`toolmesh up`, each with one runtime serving
bench/noop_tools.py, scaled to zero after 0.1 s idle):

    (a) pool      pods forked from the runtime's template process (the default)
    (b) fresh     each pod a fresh interpreter (`spawn = "exec"`): what a
                  supervisor that starts `toolmesh runtime` per pod would pay

Cold starts alternate between the two, so both see the same machine. Each one
waits until the gateway reports no pod at all (ready, starting or draining),
then times one HTTP call from sending it to reading the answer on a kept-alive
connection. Also reported: warm-call latency on (a), and the memory of an idle
pod (forked and fresh) and of the template process: RSS, and the pod's own
memory (USS: pages no other process shares, what one more pod really costs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
REPLICAS = re.compile(r'^toolmesh_replicas\{runtime="bench",state="(\w+)"\} (\S+)$', re.M)


@dataclass
class Gateway:
    label: str
    process: subprocess.Popen[str]
    url: str
    http: httpx.Client

    def pods(self) -> float:
        text = self.http.get("/metrics").text
        return sum(float(value) for _, value in REPLICAS.findall(text))

    def call(self) -> float:
        started = time.perf_counter()
        answer = self.http.post("/v1/functions/noop/invoke", content=b"{}")
        elapsed = time.perf_counter() - started
        if answer.status_code != 200 or answer.json()["is_error"]:
            raise RuntimeError(f"{self.label}: {answer.status_code} {answer.text}")
        return elapsed

    def wait_for_zero(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.pods():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: pods still running after {timeout} s")
            time.sleep(0.02)

    def pod_pids(self) -> list[int]:
        """The gateway's descendants that are pods (not the template)."""
        template = _children(self.process.pid)
        return [pid for parent in template for pid in _children(parent)]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, USS) of a process in MiB, from /proc/PID/smaps_rollup."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0])
    uss = fields["Private_Clean"] + fields["Private_Dirty"]
    return fields["Rss"] / 1024, uss / 1024


@contextlib.contextmanager
def gateway(label: str, spawn: str, workdir: Path) -> Iterator[Gateway]:
    config = workdir / f"{label}.toml"
    config.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n"
        f'[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\nspawn = "{spawn}"\n'
        f'idle_timeout = 0.1\nlog_level = "warning"\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )
    with (workdir / f"{label}.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolmesh", "up", "--config", str(config), "--log-level", "warning"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=ROOT,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"{label}: the gateway did not start; see {workdir / label}.log")
        url = f"http://127.0.0.1:{json.loads(line)['http_port']}"
        with httpx.Client(base_url=url, timeout=60) as http:
            yield Gateway(label, process, url, http)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def idle_pod_memory(target: Gateway) -> tuple[float, float]:
    target.call()
    time.sleep(0.05)
    (pid,) = target.pod_pids()
    return memory_mb(pid)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=20, help="cold starts per target (default 20)")
    parser.add_argument("--warm", type=int, default=200, help="warm calls on (a) (default 200)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        workdir = Path(tmp)
        pool = stack.enter_context(gateway("pool", "fork", workdir))
        fresh = stack.enter_context(gateway("fresh", "exec", workdir))
        cold: dict[str, list[float]] = {"pool": [], "fresh": []}
        for _ in range(args.starts):
            for target in (pool, fresh):
                target.wait_for_zero()
                cold[target.label].append(target.call())
        # Memory of idle pods and of the template (the gateway's child).
        pool.wait_for_zero()
        pod_rss, pod_uss = idle_pod_memory(pool)
        template_rss, template_uss = memory_mb(_children(pool.process.pid)[0])
        fresh.wait_for_zero()
        fresh_rss, fresh_uss = idle_pod_memory(fresh)
        warm = [pool.call() for _ in range(args.warm)]

    def summary(values: list[float]) -> dict[str, float]:
        ms = [v * 1000 for v in values]
        return {"p50_ms": statistics.median(ms), "p95_ms": percentile(ms, 95), "max_ms": max(ms)}

    results = {
        "cold_pool": summary(cold["pool"]),
        "cold_fresh": summary(cold["fresh"]),
        "warm_pool": summary(warm),
        "memory_mb": {
            "forked_pod": {"rss": pod_rss, "uss": pod_uss},
            "fresh_pod": {"rss": fresh_rss, "uss": fresh_uss},
            "template": {"rss": template_rss, "uss": template_uss},
        },
    }
    ratio = results["cold_pool"]["p50_ms"] / results["cold_fresh"]["p50_ms"]
    if args.json:
        print(json.dumps({**results, "ratio_p50": ratio, "cpus": os.cpu_count()}, indent=2))
        return 0
    print(
        f"cpus {os.cpu_count()}, {args.starts} cold starts per target, alternating; {args.warm} warm calls\n"
    )
    print(f"{'':34} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for key, label in (
        ("cold_pool", "(a) cold start, pool (fork)"),
        ("cold_fresh", "(b) cold start, fresh interpreter"),
        ("warm_pool", "warm call, pool"),
    ):
        row = results[key]
        print(f"{label:34} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['max_ms']:8.1f}")
    print(f"\n(a) / (b) p50: {ratio:.2f}  (target <= 0.25)\n")
    print(f"{'idle process':34} {'RSS MiB':>8} {'USS MiB':>8}")
    for key, label in (
        ("forked_pod", "pod forked from the template"),
        ("fresh_pod", "pod in a fresh interpreter"),
        ("template", "template process"),
    ):
        row = results["memory_mb"][key]
        print(f"{label:34} {row['rss']:8.1f} {row['uss']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
