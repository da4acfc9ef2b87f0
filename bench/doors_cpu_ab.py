"""MCP tools/call and OpenAI tool calls against the HTTP invoke: this tree and another, interleaved.

    PYTHONPATH=$PWD .venv/bin/python bench/doors_cpu_ab.py --before /path/to/other/tree [--rounds 3]
    PYTHONPATH=$PWD .venv/bin/python bench/doors_cpu_ab.py --tracing [--rounds 3]

Starts a gateway from `--before` and one from this tree at once, and in each round measures on
each gateway in turn the HTTP invoke, MCP tools/call on both revisions and `POST /v1/tool_calls`,
so every round's figures share the machine's state and each door's ratio to the HTTP invoke is
taken within one gateway and one round. Within a round each door is measured on both trees in
turn, the first tree alternating by round. Same loads and CPU accounting as cpu_per_call.py.

With `--tracing`, the two gateways are both of this tree, one with tracing off (no OTEL_*
variables) and one with it on (OTEL_EXPORTER_OTLP_ENDPOINT at a receiver in this process, which
keeps the exports and decodes them only at the end, to count the spans), and the doors include
MCP tools/call through the SDK's path (`sdk_<revision>`: an inert `_meta` key the fast path leaves
to the SDK, the path every MCP call took before the fast path, and every traced one before
answers/call_spans.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path

from cpu_per_call import (
    HOST,
    ROOT,
    Load,
    gateway_loads,
    mcp_body,
    mcp_headers,
    measure,
    noop_gateway,
    started,
)
from tracing_overhead import Receiver

DOORS = ("http", "mcp_2025-11-25", "mcp_2026-07-28", "openai")
REVISIONS = ("2025-11-25", "2026-07-28")
#: With --tracing: MCP tools/call through the SDK's path, beside the fast path's.
SDK_DOORS = tuple(f"sdk_{revision}" for revision in REVISIONS)


def sdk_loads(http: str) -> list[Load]:
    return [
        Load(
            f"sdk_{rev}",
            f"MCP tools/call {rev} (SDK)",
            f"{http}/mcp",
            mcp_body(rev, sdk=True),
            mcp_headers(rev),
        )
        for rev in REVISIONS
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, help="the other tree (a git archive)")
    parser.add_argument(
        "--tracing", action="store_true", help="this tree with tracing off and on, instead of two trees"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=8000)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    if (args.before is None) == (not args.tracing):
        parser.error("give --before or --tracing")
    measured = DOORS + SDK_DOORS if args.tracing else DOORS
    plain = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        up = noop_gateway(work)
        receiver: Receiver | None = None
        trees: dict[str, tuple[Path, dict[str, str]]] = {}
        if args.tracing:
            receiver = Receiver()
            threading.Thread(target=receiver.serve_forever, daemon=True).start()
            stack.callback(receiver.shutdown)
            trees = {"off": (ROOT, {}), "on": (ROOT, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})}
        else:
            trees = {"before": (args.before.resolve(), {}), "after": (ROOT, {})}
        targets: dict[str, tuple[int, dict[str, Load]]] = {}
        for key, (source, env) in trees.items():
            pid, ports = stack.enter_context(
                started(up, {**plain, **env, "PYTHONPATH": str(source)}, work / f"{key}.err", source)
            )
            http = f"http://{HOST}:{ports['http_port']}"
            loads = gateway_loads(http, ports["grpc_port"]) + sdk_loads(http)
            targets[key] = (pid, {load.key: load for load in loads if load.key in measured})
        figures: dict[tuple[str, str], list[float]] = {(t, d): [] for t in targets for d in measured}
        print(f"{args.requests} calls per measure, {args.clients} connections; gateway CPU µs per call\n")
        print(f"{'round':>5} {'tree':>6} " + " ".join(f"{door:>15}" for door in measured))
        for round_ in range(1, args.rounds + 1):
            # Door by door, each on both trees in turn (the first tree alternating by round), so
            # that the two figures of a door, and a tree's doors, are as close in time as can be.
            order = list(targets) if round_ % 2 else list(reversed(targets))
            for door in measured:
                for tree in order:
                    pid, by_door = targets[tree]
                    us = measure(by_door[door], pid, args.requests, args.clients, work).gateway_us
                    figures[tree, door].append(us)
            for tree in targets:
                row = [figures[tree, door][-1] for door in measured]
                ratios = " ".join(f"{us:7.1f} ({us / row[0]:4.2f}x)" for us in row)
                print(f"{round_:>5} {tree:>6} {ratios}", flush=True)
        print()
        for tree in targets:
            medians = [statistics.median(figures[tree, door]) for door in measured]
            cells = " ".join(f"{us:7.1f} ({us / medians[0]:4.2f}x)" for us in medians)
            print(f"{'median':>5} {tree:>6} {cells}")
        per_round = {
            tree: {
                door: [d / h for d, h in zip(figures[tree, door], figures[tree, "http"], strict=True)]
                for door in measured[1:]
            }
            for tree in targets
        }
        for tree, doors in per_round.items():
            spans = ", ".join(f"{door} {min(r):.2f}-{max(r):.2f}x" for door, r in doors.items())
            print(f"per-round ratio to HTTP invoke, {tree}: {spans}")
        if args.tracing:
            for door in measured:
                factors = [
                    on / off for on, off in zip(figures["on", door], figures["off", door], strict=True)
                ]
                spread = f"{min(factors):.2f}-{max(factors):.2f}x"
                print(f"on / off, {door}: {spread} (median {statistics.median(factors):.2f})")
            for rev in REVISIONS:
                for side in targets:
                    fast, sdk = figures[side, f"mcp_{rev}"], figures[side, f"sdk_{rev}"]
                    factors = [f / by_sdk for f, by_sdk in zip(fast, sdk, strict=True)]
                    print(f"fast / SDK path, {rev}, tracing {side}: median {statistics.median(factors):.2f}")
        if receiver is not None:
            print(f"spans exported with tracing on: {receiver.spans}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
