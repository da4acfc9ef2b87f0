"""What the free-text confirmation costs: requests and latency of `/v1/execute` for a read-only
call (runs at once), a call that changes data (planned, then confirmed), and a direct invoke of the
same functions, side by side in one run against `toolmesh up` serving examples/.

    .venv/bin/python bench/free_text_confirm.py [--calls 100] [--json]

Also counts, over every prompt sent, the calls that changed data without a confirmation (target 0)
and the requests each call needed (target: a confirmed call costs one request more).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from toolmesh.config import EXAMPLE_MODULES
from toolmesh.directories import default_cache_dir
from toolmesh.router.embedding.model import ensure_model

REPO = Path(__file__).resolve().parent.parent
PRODUCT = "SOCKS-WOOL"
INVOKE = "/v1/functions/delivery.{}/invoke"


def start(cache: Path, data: Path) -> tuple[subprocess.Popen[str], str]:
    config = data / "toolmesh.toml"
    modules = ", ".join(f'"{m}"' for m in EXAMPLE_MODULES)
    config.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n"
        f'[[runtimes]]\nname = "examples"\nmodules = [{modules}]\nmin_replicas = 1\n'
        f'env = {{ PYTHONPATH = "{REPO}" }}\n\n'
        f'[router]\ncache_dir = "{cache}"\ndata_dir = "{data}"\n\n[jobs]\npath = "{data}/jobs.sqlite3"\n'
    )
    command = [sys.executable, "-m", "toolmesh", "up", "--config", str(config), "--log-level", "warning"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO
    )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    return process, f"http://127.0.0.1:{ready['http_port']}"


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = work()
    return (time.perf_counter() - started) * 1000, answer


def measure(http: httpx.Client, calls: int) -> dict[str, Any]:
    rows: dict[str, list[float]] = {}
    requests: dict[str, int] = {}
    unconfirmed_changes = 0

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = http.post(path, json=body)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    def confirmed(label: str, prompt: str) -> dict[str, Any] | None:
        """Plan `prompt`, confirm it; None (and counted) if it ran without a confirmation."""
        nonlocal unconfirmed_changes
        plan_ms, planned = timed(lambda: post("/v1/execute", {"prompt": prompt}))
        if planned["status"] == "done":
            unconfirmed_changes += 1
            return None
        assert planned["status"] == "needs_confirmation", planned
        token = planned["confirmation"]["token"]
        run_ms, done = timed(lambda: post("/v1/execute", {"confirm": token}))
        assert done["status"] == "done" and not done["result"]["is_error"], done
        rows.setdefault(label, []).append(plan_ms + run_ms)
        rows.setdefault(f"  of which the plan ({label})", []).append(plan_ms)
        rows.setdefault(f"  of which the confirm ({label})", []).append(run_ms)
        requests[label] = 2
        return done

    for _ in range(calls):
        ms, placed = timed(lambda: post(INVOKE.format("place_order"), {"product_id": PRODUCT}))
        rows.setdefault("direct invoke (place_order)", []).append(ms)
        order = placed["structured"]["id"]
        ms, tracked = timed(lambda o=order: post("/v1/execute", {"prompt": f"where is my order {o}?"}))
        assert tracked["status"] == "done" and tracked["function"] == "delivery.track_order", tracked
        rows.setdefault("execute, read-only (track_order)", []).append(ms)
        confirmed("cancel_order", f"cancel order {order}")
        ordered = confirmed("place_order", f"order 1 {PRODUCT}")
        if ordered is not None:  # its stock back, for the next round
            post(INVOKE.format("cancel_order"), {"order_id": ordered["result"]["structured"]["id"]})
    requests["direct invoke (place_order)"] = requests["execute, read-only (track_order)"] = 1
    return {
        "p50_ms": {label: statistics.median(values) for label, values in rows.items()},
        "requests_per_call": requests,
        "unconfirmed_changes": unconfirmed_changes,
        "prompts": 3 * calls,  # track, cancel, order
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--cache-dir", default=str(default_cache_dir()))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache_dir)
    ensure_model(cache, progress=lambda step: print(f"model: {step}", file=sys.stderr))
    with tempfile.TemporaryDirectory() as data:
        process, url = start(cache, Path(data))
        try:
            with httpx.Client(base_url=url, timeout=30) as http:
                measure(http, 5)  # warm: the pod, the router's caches
                result = measure(http, args.calls)
        finally:
            process.terminate()
            process.wait(timeout=30)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{os.cpu_count()} cores; {args.calls} calls of each; toolmesh up serving examples/")
    print(f"{'call':52} {'requests':>8} {'p50 ms':>8}")
    for label, p50 in result["p50_ms"].items():
        print(f"{label:52} {result['requests_per_call'].get(label, ''):>8} {p50:8.2f}")
    print(
        f"calls that changed data without a confirmation: {result['unconfirmed_changes']} "
        f"of {result['prompts']} prompts"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
