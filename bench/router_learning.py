"""Routing while the router learns: what a learned prompt costs the routes that follow it.

    .venv/bin/python bench/router_learning.py [--functions 2000] [--prompts 300] [--json]

A gateway that learns from every routed call that succeeds changes its example views all
the time. Two tables, each measured side by side in one process (the routers take turns
prompt by prompt, so a busy spell slows all alike; each route embeds its prompt):

- **every route follows a learned prompt**: the BFCL pool topped up to --functions
  functions with 10 examples each, zero-shot vs with examples vs with examples and one
  prompt learned (`Router.learn`, a real SQLite store) before every route;
- **refits**: --small functions with 10 examples each, where one learned prompt in ~500
  changes the rows enough to fit the whitening again: the fit on the route path (an index
  changed directly, as every learned prompt was handled before) vs `Router.learn`, which
  fits in a thread of its own; the routes right after a fit became due are shown apart.

The examples' vectors are random unit rows (their cost does not depend on their text); the
learned prompts are BFCL prompts, embedded before the clock starts (embedding a learned
prompt is the learning call's work, not the route's).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from router_examples import (  # bench/ is on the path when run as a script
    EXAMPLES,
    SHARED,
    MemoEmbedder,
    index_with_examples,
    topped_up_pool,
)

from toolmesh.router.evaluate import load_queries
from toolmesh.router.learning import LearnedExamples
from toolmesh.router.routing import Router
from toolmesh.router.search.index import FunctionIndex
from toolmesh.router.search.text import Document

Step = Callable[[int], bool]


def timed(
    embedder: MemoEmbedder, routers: dict[str, Router], prompts: list[str], before_each: dict[str, Step]
) -> list[dict[str, object]]:
    """Route every prompt through every router in turn; before each route, the router's
    `before_each` step (given the prompt's number) runs off the clock and says whether its
    change made a fit of the whitening due: the routes right after those are reported apart."""
    for prompt in prompts[:20]:  # warm-up
        for router in routers.values():
            router.route(prompt)
    timings: dict[str, list[float]] = {name: [] for name in routers}
    after_fit: dict[str, list[float]] = {name: [] for name in routers}
    for i, prompt in enumerate(prompts):
        for name, router in routers.items():
            step = before_each.get(name)
            fit_due = step(i) if step is not None else False
            embedder.memo.pop(prompt, None)  # each route embeds its prompt, as in production
            began = time.perf_counter()
            router.route(prompt)
            timings[name].append((time.perf_counter() - began) * 1000)
            if fit_due:
                after_fit[name].append(timings[name][-1])
    for router in routers.values():
        if router.fitter is not None:
            router.fitter.join()
    return [
        {
            "catalog": name,
            "p50_ms": round(float(np.percentile(values, 50)), 2),
            "p99_ms": round(float(np.percentile(values, 99)), 2),
            "max_ms": round(float(max(values)), 2),
            "fits": len(after_fit[name]),
            "after_fit_ms": round(float(np.mean(after_fit[name])), 2) if after_fit[name] else "",
        }
        for name, values in timings.items()
    ]


def learner(router: Router, pool: list[Document], learned: list[str], seed: int) -> Step:
    """A step that teaches `router` one more prompt for a random function, as a call would."""
    rng = np.random.default_rng(seed)

    def step(i: int) -> bool:
        fitter = router.fitter
        router.learn(pool[int(rng.integers(len(pool)))].key, learned[i % len(learned)], "bench")
        return router.fitter is not fitter

    return step


def direct_learner(index: FunctionIndex, pool: list[Document], learned: list[str], seed: int) -> Step:
    """The same change made on the index directly: nothing fits the whitening but the next route."""
    rng = np.random.default_rng(seed)

    def step(i: int) -> bool:
        key = pool[int(rng.integers(len(pool)))].key
        index.set_learned(key, [*index.learned(key), learned[i % len(learned)]][-20:])
        return index._views.refit_due

    return step


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--functions", type=int, default=2000)
    parser.add_argument("--prompts", type=int, default=300)
    parser.add_argument("--small", type=int, default=500, help="functions in the refit table")
    parser.add_argument("--small-prompts", type=int, default=1500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from toolmesh.config import RouterConfig
    from toolmesh.router.service import open_embedder

    embedder = MemoEmbedder(open_embedder(RouterConfig()))
    queries = [q.prompt for q in load_queries(args.data / "bfcl_pool_queries.jsonl")]
    prompts, learned = queries[: args.prompts], queries[args.prompts :]
    embedder.embed(learned)
    tables: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        pool = topped_up_pool(args.data, args.functions)
        zero = FunctionIndex(embedder)
        zero.sync(pool)
        store = LearnedExamples(Path(scratch) / "large.sqlite3")
        learning = Router(index_with_examples(embedder, pool), 0.3, learned=store)
        routers = {
            "zero-shot": Router(zero, 0.3),
            f"{EXAMPLES} examples per function": Router(index_with_examples(embedder, pool), 0.3),
            f"{EXAMPLES} examples, a prompt learned before each route": learning,
        }
        steps = {list(routers)[2]: learner(learning, pool, learned, 1)}
        tables[f"{len(pool)} functions"] = timed(embedder, routers, prompts, steps)
        store.close()

        small = topped_up_pool(args.data, args.small)
        small_prompts = queries[: args.small_prompts]
        learned_small = queries[args.small_prompts :]
        embedder.embed(learned_small)
        direct = index_with_examples(embedder, small)
        store = LearnedExamples(Path(scratch) / "small.sqlite3")
        threaded = Router(index_with_examples(embedder, small), 0.3, learned=store)
        routers = {
            "fit on the route path (index changed directly: before)": Router(direct, 0.3),
            "Router.learn: fit in a thread of its own (now)": threaded,
        }
        steps = {
            "fit on the route path (index changed directly: before)": direct_learner(
                direct, small, learned_small, 2
            ),
            "Router.learn: fit in a thread of its own (now)": learner(threaded, small, learned_small, 2),
        }
        tables[f"{len(small)} functions, refits"] = timed(embedder, routers, small_prompts, steps)
        store.close()
    if args.json:
        print(json.dumps(tables, indent=2))
        return
    for title, rows in tables.items():
        base = float(rows[0]["p50_ms"])  # type: ignore[arg-type]
        print(f"\n{title}\n")
        print("| catalog | p50 ms | p99 ms | max ms | p50 vs first | fits due | route after one, mean ms |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            ratio = float(row["p50_ms"]) / base  # type: ignore[arg-type]
            print(
                f"| {row['catalog']} | {row['p50_ms']} | {row['p99_ms']} | {row['max_ms']} | {ratio:.2f}x "
                f"| {row['fits']} | {row['after_fit_ms']} |"
            )


if __name__ == "__main__":
    main()
