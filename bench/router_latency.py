"""Single-prompt route latency over a 4,000-function catalog, next to sentence-transformers
encoding one query, in the same run.

    make bench-router      # creates .venv-bench (torch lives only there), then runs this

or by hand, in any venv that has toolmesh[bench] and the model package:

    .venv-bench/bin/python bench/router_latency.py [--functions 4000] [--prompts 300] [--json]

The catalog is the shared BFCL pool, topped up to --functions with renamed copies
(a namespace per copy, so every function is distinct). Function embeddings are cached
under --data-dir, so only the first run pays for indexing. Both sides see the same
prompts (BFCL queries), one at a time, after a warm-up; onnxruntime uses --threads
([router] threads by default), torch its default threads.

Each side runs in a worker process of its own, as it would in production (a gateway
routing; an application encoding with sentence-transformers), and the two take turns
in blocks of --block prompts, so a busy spell on a shared machine slows both alike.
Only one worker computes at a time: torch's OpenMP workers, which spin for a while
after each call, never share the cores with onnxruntime's, nor the other way round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "routing"
WARMUP = 20


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 0.5), 3),
        "p95": round(percentile(values, 0.95), 3),
        "mean": round(statistics.fmean(values), 3),
    }


def milliseconds(run: Callable[[str], object], prompt: str) -> float:
    started = time.perf_counter()
    run(prompt)
    return (time.perf_counter() - started) * 1000


# -- the two sides, each in its worker process --------------------------------------------


def route_side(args: argparse.Namespace) -> tuple[dict[str, Callable[[str], object]], dict[str, Any]]:
    import dataclasses

    from toolmesh.config import RouterConfig
    from toolmesh.router.embedding.cache import EmbeddingCache
    from toolmesh.router.evaluate import load_pool
    from toolmesh.router.routing import Router
    from toolmesh.router.search.index import FunctionIndex
    from toolmesh.router.service import open_embedder

    settings: dict[str, object] = {"cache_dir": Path(args.cache_dir)} if args.cache_dir else {}
    if args.threads:
        settings["threads"] = args.threads
    config = RouterConfig.model_validate(settings)
    embedder = open_embedder(config, progress=lambda step: print(f"model: {step}", file=sys.stderr))
    pool = load_pool(Path(args.pool))
    docs = list(pool)
    copy = 0
    while len(docs) < args.functions:
        copy += 1
        docs += [
            dataclasses.replace(d, key=f"copy{copy}.{d.key}", namespace=f"copy{copy}")
            for d in pool[: args.functions - len(docs)]
        ]
    index = FunctionIndex(embedder, EmbeddingCache(Path(args.data_dir) / "embeddings.sqlite3"))
    started = time.perf_counter()
    report = index.sync(docs)
    build = time.perf_counter() - started
    router = Router(index, config.threshold)
    runs: dict[str, Callable[[str], object]] = {
        "route": lambda p: router.route(p, 5),
        "embed": lambda p: embedder.embed([p]),
    }
    facts = {
        "functions": len(index),
        "index_build_s": round(build, 2),
        "embedded_now": report.embedded,
        "onnxruntime_threads": config.threads,
    }
    return runs, facts


def encode_side(args: argparse.Namespace) -> tuple[dict[str, Callable[[str], object]], dict[str, Any]]:
    import torch
    from sentence_transformers import SentenceTransformer  # torch: only in the bench venv

    from toolmesh.router.embedding.model import package_model_dir

    model = SentenceTransformer(str(package_model_dir()), device="cpu")
    runs: dict[str, Callable[[str], object]] = {
        "encode": lambda p: model.encode([p], normalize_embeddings=True)
    }
    return runs, {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def worker(args: argparse.Namespace, prompts: list[str]) -> int:
    """Load one side, then answer "start end" lines with that block's timings (JSON)."""
    runs, facts = (route_side if args.worker == "route" else encode_side)(args)
    for prompt in prompts[:WARMUP]:
        for run in runs.values():
            run(prompt)
    print(json.dumps(facts), flush=True)
    for line in sys.stdin:
        start, end = map(int, line.split())
        timings: dict[str, list[float]] = {name: [] for name in runs}
        for prompt in prompts[start:end]:
            # The route and its own embedding take turns too, prompt by prompt.
            for name, run in runs.items():
                timings[name].append(milliseconds(run, prompt))
        print(json.dumps(timings), flush=True)
    return 0


class Worker:
    def __init__(self, side: str, argv: list[str]) -> None:
        self.side = side
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", side, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.facts: dict[str, Any] = self._reply()

    def _reply(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.side} worker died (exit {self.process.wait()})")
        return json.loads(line)

    def block(self, start: int, end: int) -> dict[str, list[float]]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{start} {end}\n")
        self.process.stdin.flush()
        result: dict[str, list[float]] = self._reply()
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--functions", type=int, default=4000)
    parser.add_argument("--prompts", type=int, default=300)
    parser.add_argument("--block", type=int, default=25, help="prompts per turn of each side")
    parser.add_argument("--pool", default=str(SHARED / "bfcl_pool.json"))
    parser.add_argument("--queries", default=str(SHARED / "bfcl_pool_queries.jsonl"))
    parser.add_argument("--cache-dir", help="model cache (default: the [router] default)")
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir()) / "toolmesh-bench-router"))
    parser.add_argument("--threads", type=int, help="onnxruntime threads (default: [router] threads)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", choices=["route", "encode"], help=argparse.SUPPRESS)
    args = parser.parse_args()

    from toolmesh.router.evaluate import load_queries

    prompts = [q.prompt for q in load_queries(Path(args.queries))][: args.prompts]
    if args.worker:
        return worker(args, prompts)

    passed = [a for a in sys.argv[1:] if a != "--json"]
    workers = {side: Worker(side, passed) for side in ("route", "encode")}
    timings: dict[str, list[float]] = {"route": [], "embed": [], "encode": []}
    try:
        for start in range(0, len(prompts), args.block):
            for side in workers.values():
                for name, values in side.block(start, start + args.block).items():
                    timings[name] += values
    finally:
        for side in workers.values():
            side.close()

    rows = {
        "toolmesh route (embed + hybrid rank)": timings["route"],
        "  of which: embed the prompt (onnxruntime)": timings["embed"],
        "sentence-transformers encode (1 query)": timings["encode"],
    }
    result = {
        **workers["route"].facts,
        **workers["encode"].facts,
        "prompts": len(prompts),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "latency_ms": {name: stats(values) for name, values in rows.items()},
        "ratio_p50": round(percentile(timings["route"], 0.5) / percentile(timings["encode"], 0.5), 3),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['functions']} functions, {len(prompts)} prompts, index build "
        f"{result['index_build_s']:.1f} s ({result['embedded_now']} embedded now), {result['cores']} cores; "
        f"onnxruntime {result['onnxruntime_threads']} thread(s), torch {result['torch_threads']}"
    )
    print(f"{'':42} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for name, row in result["latency_ms"].items():
        print(f"{name:42} {row['p50']:>8.2f} {row['p95']:>8.2f} {row['mean']:>8.2f}")
    print(f"route p50 / encode p50 = {result['ratio_p50']:.2f}x (target <= 0.25x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
