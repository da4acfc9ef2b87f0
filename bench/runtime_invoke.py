"""Unary Invoke throughput and latency of a runtime pod, next to a bare grpc.aio server.

    .venv/bin/python bench/runtime_invoke.py [--requests N] [--concurrency C] [--rounds R] [--json]

Each target (the bare server of bench/bare_server.py, then pods calling the no-ops of
bench/noop_tools.py with per-call logs off and on) runs as its own child process, one
at a time, and is driven by the same load generator: h2load, a C HTTP/2 client that
speaks gRPC when given the gRPC headers and a length-prefixed body. With two or more
cores the server is pinned to one core and h2load to another, so the load generator
never takes CPU from the server and every target gets the same share.

h2load only sees HTTP statuses, so before load each target is checked with a real gRPC
client (the answer is right) and with nghttp (`grpc-status: 0` in the trailers); after
load the pod's own counters must show every request ended `ok`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc

from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
HOST = "127.0.0.1"
METHOD = "/toolmesh.v1.Runtime/Invoke"
GRPC_HEADERS = ("content-type: application/grpc", "te: trailers")

DEFAULT_REQUESTS = 5000
DEFAULT_WARMUP = 1000
DEFAULT_CONCURRENCY = 16
DEFAULT_CONNECTIONS = 1
DEFAULT_ROUNDS = 5
#: Requests in the nghttp sample that checks grpc-status.
SAMPLE = 16
#: Seconds one load run may take before it is killed; keeps a hung target from hanging the bench.
RUN_TIMEOUT = 120.0
START_TIMEOUT = 20.0
#: One series of the pod's invocation counter: its outcome label and value.
COUNTER = re.compile(r'^toolmesh_runtime_invocations_total\{[^}]*outcome="(\w+)"[^}]*\} (\S+)$', re.M)


@dataclass(frozen=True)
class Target:
    key: str
    label: str
    function: str
    command: tuple[str, ...]
    #: The pod exposes counters to check against; the bare server has none.
    pod: bool = True
    #: Per-call log lines are expected on stderr.
    logs: bool = False


def _pod(*extra: str) -> tuple[str, ...]:
    # Metrics stay on (port 0) as in production; they are only read after the load.
    base = ("-m", "toolmesh", "runtime", "--module", "bench.noop_tools", "--host", HOST, "--port", "0")
    return (PYTHON, *base, "--metrics-port", "0", "--drain-grace", "1", *extra)


TARGETS = (
    Target("bare", "bare grpc.aio server", "noop", (PYTHON, "bench/bare_server.py", "--host", HOST), False),
    Target("pod-async", "pod, async noop, logs off", "noop", _pod("--log-level", "warning")),
    Target("pod-sync", "pod, sync noop, logs off", "noop_sync", _pod("--log-level", "warning")),
    Target("pod-async-logs", "pod, async noop, logs on", "noop", _pod("--log-level", "info"), logs=True),
    Target("pod-sync-logs", "pod, sync noop, logs on", "noop_sync", _pod("--log-level", "info"), logs=True),
)


@dataclass
class LoadRun:
    requests: int
    seconds: float
    rps: float
    p50_us: float
    p99_us: float
    #: CPU used during the run by the server, h2load and everything else, in % of one core.
    server_cpu: float
    load_cpu: float
    other_cpu: float


@dataclass
class Measurement:
    target: str
    label: str
    latency: list[LoadRun] = field(default_factory=list)
    throughput: list[LoadRun] = field(default_factory=list)


# -- processes ------------------------------------------------------------------------------


def pinned(command: Sequence[str], cpus: set[int] | None) -> list[str]:
    """The command, run on the given CPUs only.

    taskset rather than a preexec_fn: forking this process once it has gRPC threads
    and then running Python in the child can deadlock before exec.
    """
    if cpus is None:
        return list(command)
    return ["taskset", "--cpu-list", ",".join(map(str, sorted(cpus))), *command]


@dataclass
class Server:
    pid: int
    port: int
    metrics_port: int | None
    stderr: Path


@contextmanager
def running(target: Target, cpus: set[int] | None, workdir: Path) -> Iterator[Server]:
    """Start a target, wait for its ready line, stop it (SIGTERM, then SIGKILL) on exit."""
    out, err = workdir / f"{target.key}.out", workdir / f"{target.key}.err"
    # Files, not pipes: a pod logging every call must never block on a full pipe.
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(pinned(target.command, cpus), cwd=REPO, stdout=stdout, stderr=stderr)
    try:
        ready = _wait_ready(proc, target.label, out, err)
        yield Server(proc.pid, ready["grpc_port"], ready.get("metrics_port"), err)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], label: str, out: Path, err: Path) -> dict[str, int]:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        text = out.read_text()
        if text.endswith("\n"):
            ready: dict[str, int] = json.loads(text.splitlines()[0])
            return ready
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"{label} did not get ready:\n{err.read_text()[-2000:]}")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process, all threads."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds() -> float:
    # Only reaped children count, so during a load run this is h2load alone.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine spent in user and system mode."""
    user, nice, system = (int(v) for v in Path("/proc/stat").read_text().split(maxsplit=4)[1:4])
    # irq and softirq are left out: loopback TCP is handled there and is not another process.
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuSnapshot:
    server: float
    load: float
    machine: float

    @classmethod
    def take(cls, pid: int) -> CpuSnapshot:
        return cls(_cpu_seconds(pid), _children_cpu_seconds(), _machine_busy_seconds())

    def since(self, before: CpuSnapshot, wall: float) -> tuple[float, float, float]:
        """% of one core used by the server, by h2load and by anything else."""
        server, load = self.server - before.server, self.load - before.load
        other = max(self.machine - before.machine - server - load, 0.0)
        return _percent(server, wall), _percent(load, wall), _percent(other, wall)


def _percent(seconds: float, wall: float) -> float:
    return round(100 * seconds / wall, 1)


# -- checks ---------------------------------------------------------------------------------


def request_for(function: str) -> invoke_pb2.InvokeRequest:
    return invoke_pb2.InvokeRequest(function=function, arguments=b"{}")


def grpc_body(request: invoke_pb2.InvokeRequest) -> bytes:
    """A gRPC message on the wire: uncompressed flag, big-endian length, the message."""
    message = request.SerializeToString()
    return b"\x00" + struct.pack(">I", len(message)) + message


def check_answer(target: Target, port: int) -> None:
    """One call with a real gRPC client: the target must return a successful result."""
    with grpc.insecure_channel(f"{HOST}:{port}") as channel:
        response = runtime_pb2_grpc.RuntimeStub(channel).Invoke(request_for(target.function), timeout=10)
    if response.is_error or response.HasField("error") or not response.request_id:
        raise RuntimeError(f"{target.key}: unexpected answer to {target.function}: {response}")


def check_grpc_status(port: int, body: Path, cpus: set[int] | None) -> None:
    """A sample over HTTP/2 as h2load sends it; every trailer must say grpc-status 0."""
    command = [shutil.which("nghttp") or "nghttp", "-n", "-v", "-m", str(SAMPLE), "-d", str(body)]
    command += [arg for header in GRPC_HEADERS for arg in ("-H", header)]
    command.append(f"http://{HOST}:{port}{METHOD}")
    done = subprocess.run(pinned(command, cpus), capture_output=True, text=True, timeout=30)
    statuses = re.findall(r"grpc-status: (\d+)", done.stdout)
    if statuses != ["0"] * SAMPLE:
        raise RuntimeError(f"nghttp sample: expected {SAMPLE} x grpc-status 0, got {statuses}")


def pod_outcomes(server: Server) -> dict[str, float]:
    """The pod's invocation counter by outcome."""
    url = f"http://{HOST}:{server.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    found: dict[str, float] = {}
    for outcome, value in COUNTER.findall(text):
        found[outcome] = found.get(outcome, 0.0) + float(value)
    return found


def check_counts(target: Target, server: Server, expected: int) -> None:
    """After load, the pod must have run every request, all `ok`, and logged each if logs are on."""
    outcomes = pod_outcomes(server)
    if outcomes != {"ok": float(expected)}:
        raise RuntimeError(f"{target.key}: expected {expected} ok calls, pod counted {outcomes}")
    if target.logs:
        # The pod buffers its per-call lines for up to 50 ms before writing them.
        deadline = time.monotonic() + 2.0
        while True:
            with server.stderr.open() as lines:
                logged = sum('"msg": "invocation"' in line for line in lines)
            if logged >= expected or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if logged != expected:
            raise RuntimeError(f"{target.key}: expected {expected} log lines, found {logged}")


# -- load -----------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    index = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def h2load(
    server: Server, body: Path, requests: int, connections: int, streams: int, cpus: set[int] | None
) -> LoadRun:
    """One bounded h2load run; fails unless every request got HTTP 200."""
    log = body.with_suffix(".log")
    log.unlink(missing_ok=True)  # h2load appends to its log file
    command = [shutil.which("h2load") or "h2load", "-n", str(requests), "-c", str(connections)]
    command += ["-m", str(streams), "-t", "1", "-d", str(body), "--log-file", str(log)]
    command += [arg for header in GRPC_HEADERS for arg in ("-H", header)]
    command.append(f"http://{HOST}:{server.port}{METHOD}")
    before = CpuSnapshot.take(server.pid)
    started = time.perf_counter()
    done = subprocess.run(pinned(command, cpus), capture_output=True, text=True, timeout=RUN_TIMEOUT)
    wall = time.perf_counter() - started
    server_cpu, load_cpu, other_cpu = CpuSnapshot.take(server.pid).since(before, wall)
    finished = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", done.stdout)
    succeeded = re.search(r"(\d+) succeeded", done.stdout)
    if done.returncode != 0 or finished is None or succeeded is None or int(succeeded[1]) != requests:
        raise RuntimeError(f"h2load failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    # Columns: start (µs since epoch), HTTP status, µs until the end of the response.
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    if len(rows) != requests or any(row[1] != "200" for row in rows):
        raise RuntimeError(f"h2load log: {len(rows)} rows, not {requests} x HTTP 200")
    latencies = sorted(float(row[2]) for row in rows)
    seconds = float(finished[1]) / (1000 if finished[2] == "ms" else 1)
    return LoadRun(
        requests=requests,
        seconds=round(seconds, 4),
        rps=float(finished[3]),
        p50_us=percentile(latencies, 50),
        p99_us=percentile(latencies, 99),
        server_cpu=server_cpu,
        load_cpu=load_cpu,
        other_cpu=other_cpu,
    )


@dataclass(frozen=True)
class Settings:
    requests: int
    warmup: int
    concurrency: int
    connections: int
    server_cpus: set[int] | None
    load_cpus: set[int] | None


def measure(target: Target, settings: Settings, workdir: Path, result: Measurement) -> None:
    """Start a target, check it, warm it up, run the latency and throughput loads, stop it."""
    body = workdir / f"{target.key}.body"
    body.write_bytes(grpc_body(request_for(target.function)))
    streams = settings.concurrency // settings.connections
    with running(target, settings.server_cpus, workdir) as server:
        check_answer(target, server.port)
        check_grpc_status(server.port, body, settings.load_cpus)
        h2load(server, body, settings.warmup, settings.connections, streams, settings.load_cpus)
        result.latency.append(h2load(server, body, settings.requests, 1, 1, settings.load_cpus))
        result.throughput.append(
            h2load(server, body, settings.requests, settings.connections, streams, settings.load_cpus)
        )
        if target.pod:
            check_counts(target, server, 1 + SAMPLE + settings.warmup + 2 * settings.requests)


# -- report ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One target's line of the table: medians over rounds."""

    target: str
    label: str
    c1_p50_us: float
    c1_p99_us: float
    rps: float
    rps_rounds: list[float]
    cn_p99_us: float
    server_cpu: float
    #: Server CPU time per request: less sensitive to a noisy machine than req/s.
    server_us_per_request: float
    load_cpu: float
    #: The worst run's CPU use by other processes; high values mean the numbers are suspect.
    other_cpu: float
    #: Throughput as a fraction of the bare server's.
    ratio: float | None
    #: The bare server's CPU per request over this target's: the same ratio, less noisy.
    cpu_ratio: float | None


def summarise(results: Sequence[Measurement]) -> list[Row]:
    bare = [m for m in results if m.target == "bare"]
    baseline = statistics.median(r.rps for r in bare[0].throughput) if bare else None
    baseline_cpu = _cpu_per_request(bare[0]) if bare else None
    rows = []
    for m in results:
        rps = statistics.median(r.rps for r in m.throughput)
        rows.append(
            Row(
                target=m.target,
                label=m.label,
                c1_p50_us=statistics.median(r.p50_us for r in m.latency),
                c1_p99_us=statistics.median(r.p99_us for r in m.latency),
                rps=round(rps),
                rps_rounds=[round(r.rps) for r in m.throughput],
                cn_p99_us=statistics.median(r.p99_us for r in m.throughput),
                server_cpu=statistics.median(r.server_cpu for r in m.throughput),
                server_us_per_request=round(_cpu_per_request(m), 1),
                load_cpu=statistics.median(r.load_cpu for r in m.throughput),
                other_cpu=max(r.other_cpu for r in [*m.latency, *m.throughput]),
                ratio=round(rps / baseline, 3) if baseline else None,
                cpu_ratio=round(baseline_cpu / _cpu_per_request(m), 3) if baseline_cpu else None,
            )
        )
    return rows


def _cpu_per_request(m: Measurement) -> float:
    """Median server CPU µs per request under throughput load."""
    return statistics.median(r.server_cpu * 1e4 / r.rps for r in m.throughput)


#: Above this much CPU used by other processes in a run (% of a core), the table gets a warning.
BUSY_MACHINE = 10.0


def render(rows: Sequence[Row], concurrency: int) -> str:
    c = concurrency
    lines = [
        f"{'target':<26} {'p50 c1':>7} {'p99 c1':>7} {f'req/s c{c}':>10} {f'p99 c{c}':>8}"
        f" {'server':>7} {'server':>7} {'h2load':>7} {'other':>6} {'vs bare':>8} {'vs bare':>8}",
        f"{'':<26} {'µs':>7} {'µs':>7} {'':>10} {'µs':>8} {'CPU %':>7} {'µs/req':>7}"
        f" {'CPU %':>7} {'CPU %':>6} {'req/s':>8} {'CPU/req':>8}",
    ]
    for row in rows:
        lines.append(
            f"{row.label:<26} {row.c1_p50_us:>7.0f} {row.c1_p99_us:>7.0f} {row.rps:>10.0f}"
            f" {row.cn_p99_us:>8.0f} {row.server_cpu:>7.0f} {row.server_us_per_request:>7.0f}"
            f" {row.load_cpu:>7.0f} {row.other_cpu:>6.0f} {_times(row.ratio):>8} {_times(row.cpu_ratio):>8}"
        )
    busy = [row.label for row in rows if row.other_cpu > BUSY_MACHINE]
    if busy:
        lines.append(f"\nwarning: other processes used over {BUSY_MACHINE:.0f}% of a core during: {busy}")
    return "\n".join(lines)


def _times(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def environment(settings: Settings, rounds: int) -> dict[str, object]:
    streams = settings.concurrency // settings.connections
    h2load_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "revision": revision(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "h2load": h2load_version,
        "requests": settings.requests,
        "warmup": settings.warmup,
        "concurrency": f"{settings.connections} connection(s) x {streams} streams",
        "rounds": rounds,
        "server_cpus": sorted(settings.server_cpus) if settings.server_cpus else "any",
        "load_cpus": sorted(settings.load_cpus) if settings.load_cpus else "any",
    }


def revision() -> str:
    """The commit measured, and whether the code a pod runs had uncommitted changes."""
    # --no-optional-locks: only read the repository, never refresh its index.
    git = ["git", "--no-optional-locks", "-C", str(REPO)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        status = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no", "--", "runtimes", "errors.py", "cli.py"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    changed = [line[3:] for line in status.stdout.splitlines()]
    return head.stdout.strip() + (f" with uncommitted changes to {', '.join(changed)}" if changed else "")


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


# -- main -----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="requests per measured run")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="requests before measuring")
    parser.add_argument(
        "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="requests in flight for throughput"
    )
    parser.add_argument(
        "--connections", type=int, default=DEFAULT_CONNECTIONS, help="HTTP/2 connections the streams share"
    )
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="passes over all targets")
    parser.add_argument(
        "--targets", default=",".join(t.key for t in TARGETS), help="comma-separated subset of targets"
    )
    parser.add_argument("--no-pin", action="store_true", help="let the OS place server and h2load")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    args = parser.parse_args(argv)
    if args.concurrency % args.connections:
        parser.error("--concurrency must be a multiple of --connections")
    return args


def cpu_split(no_pin: bool) -> tuple[set[int] | None, set[int] | None]:
    """One core for the server, another for h2load, when there are two to give."""
    cpus = sorted(os.sched_getaffinity(0))
    if no_pin or len(cpus) < 2:
        return None, None
    return {cpus[0]}, {cpus[-1]}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    server_cpus, load_cpus = cpu_split(args.no_pin)
    tools = {"h2load": "nghttp2-client", "nghttp": "nghttp2-client"}
    if server_cpus is not None:
        tools["taskset"] = "util-linux"
    for tool, package in tools.items():
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found; install it with `apt-get install {package}`")
    settings = Settings(
        args.requests, args.warmup, args.concurrency, args.connections, server_cpus, load_cpus
    )
    wanted = args.targets.split(",")
    unknown = set(wanted) - {t.key for t in TARGETS}
    if unknown:
        sys.exit(f"unknown targets {sorted(unknown)}; choose from {[t.key for t in TARGETS]}")
    targets = [t for t in TARGETS if t.key in wanted]
    results = [Measurement(t.key, t.label) for t in targets]
    with tempfile.TemporaryDirectory(prefix="toolmesh-bench-") as tmp:
        # Rounds interleave the targets so slow drift in the machine hits them all alike.
        for round_number in range(args.rounds):
            for target, result in zip(targets, results, strict=True):
                print(f"round {round_number + 1}/{args.rounds}: {target.label}", file=sys.stderr, flush=True)
                measure(target, settings, Path(tmp), result)
    rows = summarise(results)
    if args.json:
        document = {
            "environment": environment(settings, args.rounds),
            "summary": [asdict(row) for row in rows],
            "runs": [asdict(m) for m in results],
        }
        print(json.dumps(document, indent=2))
    else:
        for key, value in environment(settings, args.rounds).items():
            print(f"{key:<12} {value}")
        print()
        print(render(rows, settings.concurrency))
    return 0


if __name__ == "__main__":
    sys.exit(main())
