"""What tracing costs a no-op call over HTTP: the same gateway with tracing off and on, side by side.

    .venv/bin/python bench/tracing_overhead.py [--requests N] [--rounds R] [--json]

Targets, each a `toolmesh up` serving bench/noop_tools.py with one warm pod, driven by h2load
over HTTP/1.1 one request at a time (c=1), POST /v1/functions/noop/invoke:

    off              no OTEL_* variables: no SDK loaded, no span made
    on               OTEL_EXPORTER_OTLP_ENDPOINT at a receiver on loopback; the default sampler
                     (parentbased_always_on) samples every request, and the gateway and its pod
                     export every span with the default BatchSpanProcessor settings
    on, traceparent  the same, with the caller sending a sampled ``traceparent`` header
    on, 1% sampled   OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG=0.01:
                     callers without a traceparent are sampled 1 time in 100
    on, none sampled OTEL_TRACES_SAMPLER=always_off: every span is made and propagated, none
                     recorded or exported (what tracing costs before any export)

The receiver runs in this process: it reads every OTLP/HTTP export and decodes its spans
(counted in the table, so the export is known to have happened). Rounds alternate which
target goes first; medians over the rounds are shown. The access log is on throughout (the
default), so the difference is tracing alone.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from gateway_invoke import BENCH, HOST, Run, Target, _ready_line, check_http, h2load, started
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

TRACEPARENT = "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TARGETS = ("off", "on", "on, traceparent", "on, 1% sampled", "on, none sampled")
#: What each target adds to the gateway's environment besides the receiver's endpoint.
SETTINGS = {
    "on, none sampled": {"OTEL_TRACES_SAMPLER": "always_off"},
    "on, 1% sampled": {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"},
}


class Receiver(http.server.ThreadingHTTPServer):
    """Accepts OTLP/HTTP trace exports and counts the spans in them."""

    def __init__(self) -> None:
        super().__init__((HOST, 0), _Handler)
        self.spans = 0
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        with self.server.lock:
            self.server.spans += count
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        pass


def warm_up(requests: int) -> int:
    return max(requests // 5, 500)


@dataclass
class Sample:
    run: Run
    #: Spans the receiver got from the whole run (check, warm-up, measured requests, the flush).
    spans: int
    #: CPU time (user + system) per measured request, in µs, of the gateway and of its pod.
    gateway_cpu_us: float
    pod_cpu_us: float


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pod_pid(gateway_stderr: Path) -> int:
    for line in gateway_stderr.read_text().splitlines():
        if '"pod ready"' in line:
            return int(json.loads(line)["pid"])
    raise RuntimeError("the gateway did not log its pod")


def measure(
    name: str, requests: int, workdir: Path, receiver: Receiver, settings: dict[str, str] | None = None
) -> Sample:
    """c=1 latency of one gateway configuration, the CPU its processes spent, the spans exported."""
    config = workdir / "toolmesh.toml"
    config.write_text(
        '[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if name != "off":
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        env.update(settings or {})
    command = [sys.executable, "-m", "toolmesh", "up", "--config", str(config)]
    with receiver.lock:
        before = receiver.spans
    with started(command, env, workdir / "gateway.err") as gateway:
        ready = _ready_line(gateway)
        port = ready["http_port"]
        url = f"http://{HOST}:{port}/v1/functions/noop/invoke"
        check_http(url, {"is_error": False, "content": []})
        target = Target(name.replace(", ", "_"), name, url, b"{}", grpc=False)
        headers = [TRACEPARENT] if name.endswith("traceparent") else []
        h2load(target, warm_up(requests), 1, workdir, headers)
        processes = (ready["pid"], pod_pid(workdir / "gateway.err"))
        cpu = [cpu_seconds(pid) for pid in processes]
        run = h2load(target, requests, 1, workdir, headers)
        # CPU time is the steadier figure on a shared machine: other work stretches latency,
        # not the CPU a request costs.
        cpu = [
            (cpu_seconds(pid) - before_) / requests * 1e6 for pid, before_ in zip(processes, cpu, strict=True)
        ]
    # Stopping the gateway flushed its spans and its pod's.
    with receiver.lock:
        return Sample(run, receiver.spans - before, cpu[0], cpu[1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000, help="requests per measured run")
    parser.add_argument("--rounds", type=int, default=4, help="passes over the targets (medians are shown)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    runs: dict[str, list[Sample]] = {name: [] for name in TARGETS}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            order = TARGETS if round_ % 2 == 0 else TARGETS[::-1]
            for name in order:
                runs[name].append(measure(name, args.requests, Path(tmp), receiver, SETTINGS.get(name)))
    receiver.shutdown()
    rows = {
        name: {
            "p50_us": statistics.median(s.run.p50_us for s in results),
            "p99_us": statistics.median(s.run.p99_us for s in results),
            "rps": statistics.median(s.run.rps for s in results),
            "gateway_cpu_us": statistics.median(s.gateway_cpu_us for s in results),
            "pod_cpu_us": statistics.median(s.pod_cpu_us for s in results),
            # Every request of a run counts: the check, the warm-up and the measured ones.
            "spans_per_request": statistics.median(s.spans for s in results)
            / (1 + warm_up(args.requests) + args.requests),
        }
        for name, results in runs.items()
    }
    base = rows["off"]["p50_us"]
    for row in rows.values():
        row["p50_vs_off"] = row["p50_us"] / base - 1
    if args.json:
        print(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=2))
        return 0
    print(f"cpus {os.cpu_count()}, {args.requests} requests per run at c=1, median of {args.rounds} rounds\n")
    print(
        "| tracing | p50 µs | p99 µs | req/s | p50 vs off | gateway CPU µs/req | pod CPU µs/req "
        "| CPU vs off | spans exported per request |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cpu_off = rows["off"]["gateway_cpu_us"] + rows["off"]["pod_cpu_us"]
    for name, row in rows.items():
        cpu = row["gateway_cpu_us"] + row["pod_cpu_us"]
        print(
            f"| {name} | {row['p50_us']:.0f} | {row['p99_us']:.0f} | {row['rps']:.0f} | "
            f"{row['p50_vs_off']:+.1%} | {row['gateway_cpu_us']:.0f} | {row['pod_cpu_us']:.0f} | "
            f"{cpu / cpu_off - 1:+.1%} | {row['spans_per_request']:.2f} |"
        )
    worst = max(rows["on"]["p50_vs_off"], rows["on, traceparent"]["p50_vs_off"])
    print(f"\nadded p50 latency with tracing on (every call sampled): {worst:+.1%}  (target <= +5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
