"""The HTTP invoke's gateway CPU per call: this tree against another, beside plain Starlette, interleaved.

    PYTHONPATH=$PWD .venv/bin/python bench/http_cpu_ab.py --before /path/to/other/tree [--rounds 4]

`bench/cpu_per_call.py` measures each door once; on a shared machine its ratio for one change moves
more than the change does. This starts three servers at once (a gateway from `--before`, a gateway
from this tree, bench/plain_starlette.py) and measures `POST /v1/functions/noop/invoke` on each in
turn, `--rounds` times, so every round's three figures share the machine's state. Same loads and
CPU accounting as cpu_per_call.py (h2load, HTTP/1.1, C connections; the serving process's CPU).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from cpu_per_call import BENCH, HOST, JSON_HEADERS, ROOT, Load, measure, noop_gateway, started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, required=True, help="the other tree (a git archive)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        up = noop_gateway(work)
        targets: dict[str, tuple[int, str]] = {}
        for key, tree in (("before", args.before.resolve()), ("after", ROOT)):
            pid, ports = stack.enter_context(
                started(up, {**os.environ, "PYTHONPATH": str(tree)}, work / f"{key}.err", tree)
            )
            targets[key] = (pid, f"http://{HOST}:{ports['http_port']}/v1/functions/noop/invoke")
        plain = [python, str(BENCH / "plain_starlette.py")]
        pid, ports = stack.enter_context(
            started(plain, {**os.environ, "PYTHONPATH": str(ROOT)}, work / "plain.err")
        )
        targets["starlette"] = (pid, f"http://{HOST}:{ports['http_port']}/v1/functions/noop/invoke")
        figures: dict[str, list[float]] = {key: [] for key in targets}
        print(f"{args.requests} calls per measure, {args.clients} connections; gateway CPU µs per call\n")
        print(
            f"{'round':>5} {'before':>8} {'after':>8} {'plain':>8} {'before/plain':>13} {'after/plain':>12}"
        )
        for round_ in range(1, args.rounds + 1):
            for key, (pid, url) in targets.items():
                load = Load(key, key, url, b"{}", JSON_HEADERS)
                figures[key].append(measure(load, pid, args.requests, args.clients, work).gateway_us)
            b, a, p = (figures[key][-1] for key in ("before", "after", "starlette"))
            print(f"{round_:>5} {b:8.1f} {a:8.1f} {p:8.1f} {b / p:13.2f} {a / p:12.2f}")
        b, a, p = (statistics.median(figures[key]) for key in ("before", "after", "starlette"))
        summary = f"{'median':>5} {b:8.1f} {a:8.1f} {p:8.1f} {b / p:13.2f} {a / p:12.2f}"
        print(f"{summary}   after/before {a / b:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
