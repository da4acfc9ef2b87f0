"""What each step of a traced call's path costs in one process, hot and cold.

    .venv/bin/python bench/tracing_cold_path.py [--calls N]

Between two requests a server waits in epoll while other processes run, so each request starts
with cold caches and its tracing code costs several times what a loop of it does. This runs
the gateway's steps (the request's span, the ids for the pod, the INVOKE_TRACED frame, the span's
end) and the pod's (reading the frame, its span, the span's end) in a loop: hot, and cold with
16 MB written between calls (more than this machine's caches). Medians, in µs. Every span is
sampled and queued; the export thread's batch is larger than the run, so nothing is exported
(the export is not on a call's path).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Callable

SIXTEEN_MB = 16 << 20
REQUEST = b"\x0a\x04noop\x12\x02{}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per measurement")
    args = parser.parse_args()
    os.environ.update(
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
        OTEL_BSP_SCHEDULE_DELAY="100000000",
        OTEL_BSP_MAX_QUEUE_SIZE="100000000",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="100000000",
    )
    from toolmesh import tracing
    from toolmesh.protocol import frames

    tracing.start("bench")
    junk = bytearray(SIXTEEN_MB)
    lines = b"\x01" * (SIXTEEN_MB // 64)
    clock = time.perf_counter_ns
    frame = [b""]

    def gateway() -> list[int]:
        t0 = clock()
        span = tracing.span("POST", {"url.path": "/v1/functions/noop/invoke"}, parent=(), server=True)
        span.__enter__()
        t1 = clock()
        trace = tracing.context()
        t2 = clock()
        frame[0] = frames.invoke_frame(1, REQUEST, 30.0, trace)
        t3 = clock()
        span.__exit__(None, None, None)
        t4 = clock()
        return [t1 - t0, t2 - t1, t3 - t2, t4 - t3]

    def pod() -> list[int]:
        t0 = clock()
        trace, _ = frames.split_traced(frame[0][frames.HEADER.size :])
        t1 = clock()
        span = tracing.span("toolmesh.function noop", {"toolmesh.request_id": "r"}, parent=trace, server=True)
        span.__enter__()
        t2 = clock()
        span.__exit__(None, None, None)
        t3 = clock()
        return [t1 - t0, t2 - t1, t3 - t2]

    def medians(steps: Callable[[], list[int]], cold: bool) -> list[float]:
        runs = []
        for _ in range(args.calls):
            if cold:
                junk[::64] = lines
            runs.append(steps())
        return [statistics.median(column) / 1000 for column in zip(*runs, strict=True)]

    names = {
        gateway: ["span opened", "context()", "invoke_frame", "span ended"],
        pod: ["split_traced", "span opened", "span ended"],
    }
    print(f"{args.calls} calls each, medians in µs (load {os.getloadavg()[0]:.2f})\n")
    print("| process | step | hot | cold |\n|---|---|---:|---:|")
    for steps, where in ((gateway, "gateway"), (pod, "pod")):
        hot, cold = medians(steps, False), medians(steps, True)
        for name, h, c in zip(names[steps], hot, cold, strict=True):
            print(f"| {where} | {name} | {h:.2f} | {c:.2f} |")
        print(f"| {where} | **all** | {sum(hot):.2f} | {sum(cold):.2f} |")
    logging.getLogger("toolmesh.tracing").setLevel(logging.CRITICAL)  # the spans have nowhere to go
    tracing.shutdown(0.1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
