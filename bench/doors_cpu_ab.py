"""MCP tools/call and OpenAI tool calls against the HTTP invoke: this tree and another, interleaved.

    PYTHONPATH=$PWD .venv/bin/python bench/doors_cpu_ab.py --before /path/to/other/tree [--rounds 3]

Starts a gateway from `--before` and one from this tree at once, and in each round measures on
each gateway in turn the HTTP invoke, MCP tools/call on both revisions and `POST /v1/tool_calls`,
so every round's figures share the machine's state and each door's ratio to the HTTP invoke is
taken within one gateway and one round. Within a round each door is measured on both trees in
turn, the first tree alternating by round. Same loads and CPU accounting as cpu_per_call.py.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from cpu_per_call import BENCH, HOST, ROOT, Load, gateway_loads, measure, started

DOORS = ("http", "mcp_2025-11-25", "mcp_2026-07-28", "openai")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="the other tree (a git archive)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=8000)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        config = work / "toolmesh.toml"
        config.write_text(
            "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[router]\nenabled = false\n\n"
            "[jobs]\nenabled = false\n\n"
            '[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
            f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
        )
        up = [python, "-m", "toolmesh", "up", "--config", str(config)]
        targets: dict[str, tuple[int, dict[str, Load]]] = {}
        for key, tree in (("before", args.before.resolve()), ("after", ROOT)):
            pid, ports = stack.enter_context(
                started(up, {**os.environ, "PYTHONPATH": str(tree)}, work / f"{key}.err", tree)
            )
            loads = gateway_loads(f"http://{HOST}:{ports['http_port']}", ports["grpc_port"])
            targets[key] = (pid, {load.key: load for load in loads if load.key in DOORS})
        figures: dict[tuple[str, str], list[float]] = {(t, d): [] for t in targets for d in DOORS}
        print(f"{args.requests} calls per measure, {args.clients} connections; gateway CPU µs per call\n")
        print(f"{'round':>5} {'tree':>6} " + " ".join(f"{door:>15}" for door in DOORS))
        for round_ in range(1, args.rounds + 1):
            # Door by door, each on both trees in turn (the first tree alternating by round), so
            # that the two figures of a door, and a tree's doors, are as close in time as can be.
            order = list(targets) if round_ % 2 else list(reversed(targets))
            for door in DOORS:
                for tree in order:
                    pid, by_door = targets[tree]
                    us = measure(by_door[door], pid, args.requests, args.clients, work).gateway_us
                    figures[tree, door].append(us)
            for tree in targets:
                row = [figures[tree, door][-1] for door in DOORS]
                ratios = " ".join(f"{us:7.1f} ({us / row[0]:4.2f}x)" for us in row)
                print(f"{round_:>5} {tree:>6} {ratios}", flush=True)
        print()
        for tree in targets:
            medians = [statistics.median(figures[tree, door]) for door in DOORS]
            cells = " ".join(f"{us:7.1f} ({us / medians[0]:4.2f}x)" for us in medians)
            print(f"{'median':>5} {tree:>6} {cells}")
        per_round = {
            tree: {
                door: [d / h for d, h in zip(figures[tree, door], figures[tree, "http"], strict=True)]
                for door in DOORS[1:]
            }
            for tree in targets
        }
        for tree, doors in per_round.items():
            spans = ", ".join(f"{door} {min(r):.2f}-{max(r):.2f}x" for door, r in doors.items())
            print(f"per-round ratio to HTTP invoke, {tree}: {spans}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
