"""What the gateway's own tracing work costs a no-op call, measured inside one process.

    .venv/bin/python bench/tracing_toggle.py [--rounds R] [--requests N]

`bench/tracing_overhead.py` compares separate gateways, whose latency also differs by where the
kernel places each process and by what the machine is doing. This one starts one gateway in
this process with tracing on (every call sampled, or none with `--none-sampled`) and a warm
pod, then alternates bursts of calls with toolmesh's tracing switched on and off in the same
process (the switch every tracing call reads), so both sides share one heap, one placement and
the same moments of the machine. It reports this process's CPU time per call (gateway and
client; the client's share is the same on both sides) and the median of the paired differences.
Spans go to a closed port and are not exported during the run (the export thread's batch is
larger than the run), so this is the work on the call's path alone.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


async def measure(rounds: int, requests: int) -> dict[str, list[float]]:
    import httpx

    from toolmesh import tracing
    from toolmesh.config import GatewayConfig, MeshConfig, RouterConfig
    from toolmesh.config.runtime_config import RuntimeConfig
    from toolmesh.gateway.server import start_gateway

    runtime = RuntimeConfig(
        name="bench",
        modules=("noop_tools",),
        min_replicas=1,
        max_replicas=1,
        env={"PYTHONPATH": str(BENCH)},
        log_level="warning",
    )
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=0, access_log=False),
        runtimes=(runtime,),
        router=RouterConfig(enabled=False),
    )
    tracing.start("toolmesh-bench")
    gateway = await start_gateway(config, environ={})
    started = tracing._active  # the switch: None is tracing off, for every tracing call
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    try:
        async with httpx.AsyncClient(base_url=gateway.url) as http:

            async def burst() -> float:
                begun = time.process_time()
                for _ in range(requests):
                    response = await http.post("/v1/functions/noop/invoke", json={})
                    response.raise_for_status()
                return (time.process_time() - begun) / requests * 1e6

            await burst()
            for round_ in range(rounds):
                for state in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                    tracing._active = started if state == "on" else None
                    cpu[state].append(await burst())
    finally:
        tracing._active = started
        await gateway.stop(grace=0)
    return cpu


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="pairs of bursts")
    parser.add_argument("--requests", type=int, default=300, help="calls per burst")
    parser.add_argument("--none-sampled", action="store_true", help="OTEL_TRACES_SAMPLER=always_off")
    args = parser.parse_args()
    os.environ.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_BSP_SCHEDULE_DELAY": str(10**9),
            "OTEL_BSP_MAX_QUEUE_SIZE": str(10**7),
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": str(10**7),
        }
    )
    if args.none_sampled:
        os.environ["OTEL_TRACES_SAMPLER"] = "always_off"
    logging.disable(logging.WARNING)
    cpu = asyncio.run(measure(args.rounds, args.requests))
    on, off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
    paired = statistics.median(a - b for a, b in zip(cpu["on"], cpu["off"], strict=True))
    sampled = "none sampled" if args.none_sampled else "every call sampled"
    print(f"{args.rounds} pairs of {args.requests} calls, {sampled}; CPU µs per call of this process\n")
    print("| tracing | CPU µs/call (median) |\n|---|---:|")
    print(f"| on | {on:.0f} |\n| off | {off:.0f} |")
    print(f"\npaired difference on - off: {paired:+.0f} µs per call ({paired / off:+.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
