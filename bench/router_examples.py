"""Routing with example prompts: how to fuse them, measured side by side in one run.

    .venv/bin/python bench/router_examples.py [--k-examples 10] [--json]

APIBench TorchHub (../shared/data/routing): the pool's 94 functions, up to --k-examples
training prompts per function as examples, scored on the 186 held-out eval prompts.
Every text is embedded once (memoised), then each fusion is one pass over the prompts:
description only, a centroid of the example embeddings, max over views, and blends of
them with the description score, with and without the examples' words in BM25, in the
raw and in the whitened embedding space. Each row also gives --folds cross-validation
figures on the training prompts: settings are chosen on those, never on the eval prompts.
--bfcl adds the BFCL zero-shot figures (no examples: they must not move).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolmesh.router.embedding.embedder import Embedder, Vectors
from toolmesh.router.evaluate import Query, evaluate, load_pool, load_queries, with_examples
from toolmesh.router.search.index import FunctionIndex, Fusion
from toolmesh.router.search.text import Document
from toolmesh.router.service import open_embedder

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "routing"


class MemoEmbedder:
    """Embeds each distinct text once, so every variant sees the same vectors for free."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.memo: dict[str, Vectors] = {}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed(missing), strict=True))
        return np.stack([self.memo[t] for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)


@dataclass(frozen=True)
class Variant:
    name: str
    fusion: Fusion
    examples: bool = True


def run(
    embedder: MemoEmbedder, pool: list[Document], queries: list[Query], variant: Variant
) -> tuple[float, float, float]:
    index = FunctionIndex(embedder, fusion=variant.fusion)
    report = evaluate(embedder, pool, queries, k=5, match="id", index=index)
    return 100 * report.recall_at_1, 100 * report.recall_at_k, report.mrr


def cross_validate(
    embedder: MemoEmbedder,
    pool: list[Document],
    training: list[Query],
    variant: Variant,
    per_function: int,
    folds: int,
) -> tuple[float, float]:
    """R@1 and R@5 over the training prompts, each held out once: in fold k, every function's
    n-th prompt with n mod folds == k is a query and the others are its examples. Settings
    are chosen on these figures; the eval prompts are only reported."""
    seen: dict[str, int] = {}
    fold_of = []
    for query in training:
        fold_of.append(seen.get(query.expected, 0) % folds)
        seen[query.expected] = seen.get(query.expected, 0) + 1
    hits_1 = hits_5 = 0.0
    for fold in range(folds):
        held = [q for q, f in zip(training, fold_of, strict=True) if f == fold]
        rest = [q for q, f in zip(training, fold_of, strict=True) if f != fold]
        docs = with_examples(pool, rest, per_function) if variant.examples else pool
        report = evaluate(
            embedder, docs, held, k=5, match="id", index=FunctionIndex(embedder, fusion=variant.fusion)
        )
        hits_1 += report.recall_at_1 * len(held)
        hits_5 += report.recall_at_k * len(held)
    return 100 * hits_1 / len(training), 100 * hits_5 / len(training)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--k-examples", type=int, default=10)
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds on the training prompts")
    parser.add_argument("--bfcl", action="store_true", help="also route the BFCL set zero-shot (slow)")
    parser.add_argument(
        "--latency", action="store_true", help="only the route-latency table (2,000 functions)"
    )
    parser.add_argument("--make-up", action="store_true", help="only the make-up examples' prompt set")
    parser.add_argument("--sessions", action="store_true", help="only the follow-up (two-turn) set")
    parser.add_argument("--functions", type=int, default=2000)
    parser.add_argument("--prompts", type=int, default=300)
    args = parser.parse_args()

    from toolmesh.config import RouterConfig

    embedder = MemoEmbedder(open_embedder(RouterConfig()))
    if args.make_up or args.sessions:
        table = make_up(embedder) if args.make_up else sessions(embedder)
        print("| " + " | ".join(table[0]) + " |\n|" + "---|" * len(table[0]))
        for row in table:
            print("| " + " | ".join(str(v) for v in row.values()) + " |")
        return
    if args.latency:
        table = latency(args, embedder)
        if args.json:
            print(json.dumps(table, indent=2))
            return
        base = float(table[0]["p50_ms"])  # type: ignore[arg-type]
        print(
            "| catalog | functions | route p50 ms | route p95 ms | p50 vs zero-shot |\n|---|---|---|---|---|"
        )
        for row in table:
            ratio = float(row["p50_ms"]) / base  # type: ignore[arg-type]
            print(
                f"| {row['catalog']} | {row['functions']} | {row['p50_ms']} | {row['p95_ms']} "
                f"| {ratio:.2f}x |"
            )
        return
    plain = load_pool(args.data / "apibench_torchhub_pool.json")
    training = load_queries(args.data / "apibench_torchhub_train.jsonl")
    queries = load_queries(args.data / "apibench_torchhub_eval.jsonl")
    pool = with_examples(plain, training, args.k_examples)

    raw = {"whitening": None}
    no_terms = {"example_terms": False, **raw}
    variants = [
        Variant("description only", Fusion(), examples=False),
        Variant("BM25 expansion only", Fusion(best_weight=0, centroid_weight=0)),
        Variant("centroid, w=1.0 (no BM25 expansion)", Fusion(best_weight=0, centroid_weight=1, **no_terms)),
        Variant("centroid, w=0.5 + BM25", Fusion(best_weight=0, centroid_weight=0.5, **raw)),
        Variant(
            "max over views, w=0.5 (no BM25 expansion)",
            Fusion(best_weight=0.5, centroid_weight=0, **no_terms),
        ),
        Variant("max over views, w=0.5 + BM25", Fusion(best_weight=0.5, centroid_weight=0, **raw)),
        Variant("max over views, w=0.7 + BM25", Fusion(best_weight=0.7, centroid_weight=0, **raw)),
        Variant("max over views, w=1.0 + BM25", Fusion(best_weight=1.0, centroid_weight=0, **raw)),
        Variant("max 1/4 + centroid 1/4 + BM25", Fusion(best_weight=0.25, centroid_weight=0.25, **raw)),
        Variant("max 1/2 + centroid 1/4 + BM25", Fusion(best_weight=0.5, centroid_weight=0.25, **raw)),
        Variant("max 1/3 + centroid 1/3 (no BM25 expansion)", Fusion(**no_terms)),
        Variant("max 1/3 + centroid 1/3 + BM25 (raw embeddings: before)", Fusion(**raw)),
        Variant("whitened, shrinkage 0.1", Fusion(whitening=0.1)),
        Variant("whitened, shrinkage 0.5", Fusion(whitening=0.5)),
        Variant("whitened, max 1/4 + centroid 1/2", Fusion(best_weight=0.25, centroid_weight=0.5)),
        Variant("**whitened, shrinkage 0.3: max 1/3 + centroid 1/3 + BM25 (default)**", Fusion()),
    ]
    rows = []
    for variant in variants:
        cv = cross_validate(embedder, plain, training, variant, args.k_examples, args.folds)
        r1, r5, mrr = run(embedder, pool if variant.examples else plain, queries, variant)
        rows.append(
            {
                "variant": variant.name,
                "CV R@1": round(cv[0], 1),
                "CV R@5": round(cv[1], 1),
                "R@1": round(r1, 1),
                "R@5": round(r5, 1),
                "MRR": round(mrr, 3),
            }
        )
    if args.bfcl:
        bfcl = evaluate(
            embedder,
            load_pool(args.data / "bfcl_pool.json"),
            load_queries(args.data / "bfcl_pool_queries.jsonl"),
            k=5,
            match="name",
        )
        rows.append(
            {
                "variant": "BFCL zero-shot (no examples), match=name",
                "CV R@1": "",
                "CV R@5": "",
                "R@1": round(100 * bfcl.recall_at_1, 1),
                "R@5": round(100 * bfcl.recall_at_k, 1),
                "MRR": round(bfcl.mrr, 3),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"APIBench TorchHub: {len(plain)} functions, {len(queries)} eval prompts, "
        f"<= {args.k_examples} examples per function from the training prompts\n"
    )
    print(
        f"CV: {args.folds}-fold cross-validation on the training prompts (the k-th of each function's"
        " prompts held out in fold k mod folds; the rest are examples)\n"
    )
    print("| fusion | CV R@1 | CV R@5 | eval R@1 | eval R@5 | eval MRR |\n|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row.values()) + " |")


EXAMPLES = 10


def topped_up_pool(data: Path, functions: int) -> list[Document]:
    """The BFCL pool cut or topped up with renamed copies to `functions` functions."""
    pool = load_pool(data / "bfcl_pool.json")
    while len(pool) < functions:
        copy = len(pool) // 1879
        pool += [dataclasses.replace(d, key=f"{d.key}-c{copy}", namespace=f"copy{copy}") for d in pool]
    return pool[:functions]


def index_with_examples(embedder: Embedder, pool: list[Document], seed: int = 0) -> FunctionIndex:
    """An index of `pool` whose every function has EXAMPLES author examples. The examples'
    vectors cost the same whatever they say: random unit rows stand in for embedded prompts
    (embedding 20,000 of them would only slow the bench's set-up)."""
    index = FunctionIndex(embedder)
    index.sync(pool)
    rng = np.random.default_rng(seed)
    for doc in pool:
        slot = index._slots[doc.key]
        rows = rng.normal(size=(EXAMPLES, embedder.dimension)).astype(np.float32)
        index._author[slot] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        index._refresh_views(slot)
    return index


def latency(args: argparse.Namespace, embedder: MemoEmbedder) -> list[dict[str, object]]:
    """Route p50/p95 over a 2,000-function catalog, zero-shot and with 10 examples each,
    the two indexes taking turns prompt by prompt in one process."""
    import time

    from toolmesh.router.routing import Router

    pool = topped_up_pool(args.data, args.functions)
    prompts = [q.prompt for q in load_queries(args.data / "bfcl_pool_queries.jsonl")][: args.prompts]
    zero = FunctionIndex(embedder)
    zero.sync(pool)
    rich = index_with_examples(embedder, pool)
    routers = {"zero-shot": Router(zero, 0.3), "10 examples per function": Router(rich, 0.3)}
    timings: dict[str, list[float]] = {name: [] for name in routers}
    for prompt in prompts[:20]:  # warm-up
        for router in routers.values():
            router.route(prompt)
    for prompt in prompts:
        for name, router in routers.items():
            embedder.memo.pop(prompt, None)  # each route embeds its prompt, as in production
            began = time.perf_counter()
            router.route(prompt)
            timings[name].append((time.perf_counter() - began) * 1000)
    rows = []
    for name, values in timings.items():
        p50, p95 = np.percentile(values, 50), np.percentile(values, 95)
        rows.append(
            {
                "catalog": name,
                "functions": len(pool),
                "p50_ms": round(float(p50), 2),
                "p95_ms": round(float(p95), 2),
            }
        )
    return rows


def _make_up_docs() -> list[Document]:
    import sys

    from toolmesh.gateway.core.free_text import spec_documents
    from toolmesh.runtimes.functions.discovery import discover, import_module

    sys.path.insert(0, str(REPO))
    names = ("weather", "delivery", "arithmetic", "text", "knowledge", "streaming")
    return spec_documents([h.spec for name in names for h in discover(import_module(f"examples.{name}"))[0]])


def sessions(embedder: MemoEmbedder) -> list[dict[str, object]]:
    """Follow-ups (tests/examples/data/follow_ups.jsonl, written for this): the second turn's
    function, chosen from the prompt alone and with the session's first turn."""
    import asyncio
    import datetime as dt
    import tempfile

    from toolmesh.errors import ToolmeshError
    from toolmesh.router.execution import PromptExecutor
    from toolmesh.router.routing import Router
    from toolmesh.router.sessions import SessionStore

    lines = (REPO / "tests" / "examples" / "data" / "follow_ups.jsonl").read_text().splitlines()
    conversations = [json.loads(line)["turns"] for line in lines if line.strip()]
    path = Path(tempfile.mkdtemp(prefix="tm-")) / "sessions.sqlite3"
    store = SessionStore(path, ttl=3600, max_sessions=100, max_turns=10)
    router = Router(FunctionIndex(embedder), 0.3, store)
    router.sync(_make_up_docs())
    executor = PromptExecutor(router, today=lambda: dt.date(2026, 11, 23))

    async def nothing(function: str, arguments: object) -> dict[str, object]:
        return {}

    alone = together = 0
    for number, turns in enumerate(conversations):
        session = f"s{number}"
        first, second = turns
        with contextlib.suppress(ToolmeshError):
            asyncio.run(executor.execute(first["prompt"], nothing, session_id=session, dry_run=True))
        alone += router.route(second["prompt"]).match == second["function"]
        together += executor._plan(second["prompt"], 5, session, None).function == second["function"]
    store.close()
    n = len(conversations)
    return [
        {"second turn routed": "from its prompt alone", "right": f"{alone}/{n}"},
        {
            "second turn routed": "with the session (previous prompt as context)",
            "right": f"{together}/{n}",
        },
    ]


def make_up(embedder: MemoEmbedder) -> list[dict[str, object]]:
    """The `make up` examples and the prompt set written for them (tests/examples/data):
    routing accuracy without and with the author examples, and what a dry-run execute does."""
    import asyncio
    import datetime as dt

    from toolmesh.errors import InvalidArguments
    from toolmesh.router.execution import PromptExecutor
    from toolmesh.router.routing import Router

    docs = _make_up_docs()
    lines = (REPO / "tests" / "examples" / "data" / "routing_prompts.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]

    async def nothing(function: str, arguments: object) -> dict[str, object]:
        raise AssertionError("dry run")

    rows = []
    for label, pool in (
        ("description only", [dataclasses.replace(d, examples=()) for d in docs]),
        ("with author examples (3 each)", docs),
    ):
        router = Router(FunctionIndex(embedder), 0.3)
        router.sync(pool)
        executor = PromptExecutor(router, today=lambda: dt.date(2026, 11, 23))
        right = ran = asked = contradicted = 0
        for case in cases:
            if router.route(case["prompt"]).match != case["function"]:
                continue
            right += 1
            try:
                execution = asyncio.run(executor.execute(case["prompt"], nothing, dry_run=True))
                settled, ran = execution.arguments, ran + 1
            except InvalidArguments as asking:
                settled, asked = asking.details["arguments"], asked + 1
            expected = case["arguments"]
            contradicted += any(k in expected and expected[k] != v for k, v in settled.items())
        rows.append(
            {
                "catalog": label,
                "prompts": len(cases),
                "routed right": f"{100 * right / len(cases):.1f} %",
                "would run": ran,
                "asked": asked,
                "contradicting the prompt": contradicted,
            }
        )
    return rows


if __name__ == "__main__":
    main()
