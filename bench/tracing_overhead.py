"""What tracing costs a no-op call over HTTP: the same gateway with tracing off and on, side by side.

    .venv/bin/python bench/tracing_overhead.py [--requests N] [--rounds R] [--json]

Targets, each a `toolmesh up` serving bench/noop_tools.py with one warm pod, driven by h2load
over HTTP/1.1 one request at a time (c=1), POST /v1/functions/noop/invoke:

    off              no OTEL_* variables: no SDK loaded, no span made
    off, traceparent the same, with the caller sending a sampled ``traceparent`` header
    on               OTEL_EXPORTER_OTLP_ENDPOINT at a receiver on loopback; the default sampler
                     (parentbased_always_on) samples every request, and the gateway and its pod
                     export every span with the default BatchSpanProcessor settings
    on, traceparent  the same, with the caller sending a sampled ``traceparent`` header;
                     compared with `off, traceparent`, tracing off and the same header
    on, 1% sampled   OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG=0.01:
                     callers without a traceparent are sampled 1 time in 100
    on, none sampled OTEL_TRACES_SAMPLER=always_off: every span is made and propagated, none
                     recorded or exported (what tracing costs before any export)

Every target runs as two gateways (`--instances`) at once (idle ones cost nothing: where the
kernel happens to place a gateway and its pod moves its latency by tens of µs for its whole
life, so each figure averages more than one). Each exports to its own receiver in this process,
which keeps every OTLP/HTTP export and decodes them after the measurement (the span counts in
the table show the exports happened). Each round sends one burst to every gateway, starting at
another one each round; the table shows medians over rounds, and the ratios against `off` are
paired by round, so a busier moment of the shared machine falls on both sides of each ratio.
The access log is on throughout (the default), so the difference is tracing alone.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gateway_invoke import BENCH, HOST, Run, Target, _ready_line, check_http, h2load, started
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

TRACEPARENT = "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TARGETS = ("off", "off, traceparent", "on", "on, traceparent", "on, 1% sampled", "on, none sampled")
#: The target each is compared with: the same requests with tracing off (a traceparent header
#: costs its parsing whether or not the gateway traces).
BASELINE = {"on, traceparent": "off, traceparent"}
#: What each target adds to the gateway's environment besides the receiver's endpoint.
SETTINGS = {
    "on, none sampled": {"OTEL_TRACES_SAMPLER": "always_off"},
    "on, 1% sampled": {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"},
}


class Receiver(http.server.ThreadingHTTPServer):
    """Accepts OTLP/HTTP trace exports; `spans` counts the spans in them. Decoding waits until
    the count is asked for, after the measurement, so the receiver's work (a collector's, on
    another machine in production) does not compete with the gateways for this machine's CPUs."""

    def __init__(self) -> None:
        super().__init__((HOST, 0), _Handler)
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}"

    @property
    def spans(self) -> int:
        with self.lock:
            bodies = list(self.bodies)
        requests = map(trace_service_pb2.ExportTraceServiceRequest.FromString, bodies)
        return sum(
            len(s.spans) for request in requests for r in request.resource_spans for s in r.scope_spans
        )


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver
    # Keeps the connection, as a collector does (HTTP/1.0 made every export a new connection).
    protocol_version = "HTTP/1.1"
    answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, format: str, *args: object) -> None:
        pass


def warm_up(requests: int) -> int:
    return max(requests // 5, 500)


@dataclass
class Burst:
    run: Run
    #: CPU time (user + system) per request of the burst, in µs, of the gateway and of its pod.
    gateway_cpu_us: float
    pod_cpu_us: float


@dataclass
class Gateway:
    """One target's `toolmesh up`, its pod, and the receiver its spans go to."""

    name: str
    target: Target
    headers: list[str]
    processes: tuple[int, int]
    receiver: Receiver
    requests: int = 0

    def burst(self, requests: int, workdir: Path) -> Burst:
        cpu = [cpu_seconds(pid) for pid in self.processes]
        run = h2load(self.target, requests, 1, workdir, self.headers)
        self.requests += requests
        # CPU time is the steadier figure on a shared machine: other work stretches latency,
        # not the CPU a request costs.
        gateway, pod = (
            (cpu_seconds(pid) - before) / requests * 1e6
            for pid, before in zip(self.processes, cpu, strict=True)
        )
        return Burst(run, gateway, pod)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pod_pid(gateway_stderr: Path) -> int:
    for line in gateway_stderr.read_text().splitlines():
        if '"pod ready"' in line:
            return int(json.loads(line)["pid"])
    raise RuntimeError("the gateway did not log its pod")


def start(name: str, instance: int, workdir: Path, stack: contextlib.ExitStack, warm: int) -> Gateway:
    """A warm `toolmesh up` for one target, left running on `stack`."""
    home = workdir / f"{name.replace(', ', '_').replace('%', 'pct').replace(' ', '_')}-{instance}"
    home.mkdir()
    config = home / "toolmesh.toml"
    config.write_text(
        '[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    stack.callback(receiver.shutdown)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if not name.startswith("off"):
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        env.update(SETTINGS.get(name, {}))
    command = [sys.executable, "-m", "toolmesh", "up", "--config", str(config)]
    gateway = stack.enter_context(started(command, env, home / "gateway.err"))
    ready = _ready_line(gateway)
    url = f"http://{HOST}:{ready['http_port']}/v1/functions/noop/invoke"
    check_http(url, {"is_error": False, "content": []})
    target = Target(home.name, name, url, b"{}", grpc=False)
    headers = [TRACEPARENT] if name.endswith("traceparent") else []
    h2load(target, warm, 1, home, headers)
    return Gateway(name, target, headers, (ready["pid"], pod_pid(home / "gateway.err")), receiver, 1 + warm)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000, help="requests per burst")
    parser.add_argument("--rounds", type=int, default=10, help="bursts per target (medians are shown)")
    parser.add_argument("--instances", type=int, default=2, help="gateways per target (averaged)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    #: Per target, per round, the bursts of its instances.
    bursts: dict[str, list[list[Burst]]] = {name: [] for name in TARGETS}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        gateways = [
            start(name, instance, Path(tmp), stack, warm_up(args.requests))
            for instance in range(args.instances)
            for name in TARGETS
        ]
        for round_ in range(args.rounds):
            for runs in bursts.values():
                runs.append([])
            # Each round starts at another gateway, so none always follows the same neighbour.
            turn = round_ % len(gateways)
            for gateway in gateways[turn:] + gateways[:turn]:
                bursts[gateway.name][-1].append(gateway.burst(args.requests, Path(tmp) / gateway.target.key))
        stack.close()  # stopping each gateway flushes its spans and its pod's
        spans = {
            name: sum(g.receiver.spans for g in gateways if g.name == name)
            / sum(g.requests for g in gateways if g.name == name)
            for name in TARGETS
        }

    def per_round(runs: list[list[Burst]], value: Callable[[Burst], float]) -> list[float]:
        return [statistics.fmean(value(b) for b in round_) for round_ in runs]

    def vs_off(name: str, value: Callable[[Burst], float]) -> float:
        # Paired by round: both sides met the same machine, whatever else ran on it.
        runs, baseline = bursts[name], BASELINE.get(name, "off")
        pairs = zip(per_round(runs, value), per_round(bursts[baseline], value), strict=True)
        return statistics.median(mine / off - 1 for mine, off in pairs)

    def cpu(b: Burst) -> float:
        return b.gateway_cpu_us + b.pod_cpu_us

    rows = {
        name: {
            "p50_us": statistics.median(per_round(runs, lambda b: b.run.p50_us)),
            "p99_us": statistics.median(per_round(runs, lambda b: b.run.p99_us)),
            "rps": statistics.median(per_round(runs, lambda b: b.run.rps)),
            "p50_vs_off": vs_off(name, lambda b: b.run.p50_us),
            "gateway_cpu_us": statistics.median(per_round(runs, lambda b: b.gateway_cpu_us)),
            "pod_cpu_us": statistics.median(per_round(runs, lambda b: b.pod_cpu_us)),
            "cpu_vs_off": vs_off(name, cpu),
            "spans_per_request": spans[name],
        }
        for name, runs in bursts.items()
    }
    if args.json:
        print(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=2))
        return 0
    print(
        f"cpus {os.cpu_count()}, {args.instances} gateways per target, all up at once; {args.rounds} "
        f"rounds of {args.requests} requests at c=1 to each; medians over rounds, ratios paired by round\n"
    )
    print(
        "| tracing | p50 µs | p99 µs | req/s | p50 vs off | gateway CPU µs/req | pod CPU µs/req "
        "| CPU vs off | spans exported per request |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['p50_us']:.0f} | {row['p99_us']:.0f} | {row['rps']:.0f} | "
            f"{row['p50_vs_off']:+.1%} | {row['gateway_cpu_us']:.0f} | {row['pod_cpu_us']:.0f} | "
            f"{row['cpu_vs_off']:+.1%} | {row['spans_per_request']:.2f} |"
        )
    print("\n(`on, traceparent` is compared with `off, traceparent`, every other row with `off`.)")
    worst = max(rows["on"]["p50_vs_off"], rows["on, traceparent"]["p50_vs_off"])
    print(f"\nadded p50 latency with tracing on (every call sampled): {worst:+.1%}  (target <= +5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
