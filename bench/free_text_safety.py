"""Free-text safety: read-style prompts must not reach functions that change data, commands must.

    .venv/bin/python bench/free_text_safety.py [--json]
    .venv/bin/python bench/free_text_safety.py --write-bfcl-set   # re-select bench/data/bfcl_*.json

Every prompt is routed twice in one process, by the same index: "before" takes the best
candidate over the threshold (`Router.safe_matches = False`), "after" applies the rules of
router/safety/rules.py. Tables:

(a) read-style prompts (bench/data/free_text_read_prompts.json, written for the example
    catalog: `make up`'s examples plus examples/inventory.py; and BFCL prompts that ask a
    question of a read-style function while a function that changes data is among their
    top 5, bench/data/bfcl_read_prompts.json): how many route to a function that changes
    data (target 0) and how many to a right one;
(b) commands for functions that change data (bench/data/free_text_imperative_prompts.json,
    and BFCL prompts whose function changes data): how many still route to it;
(c) all 2,061 BFCL prompts zero-shot, the two routers alternating prompt by prompt: R@1 and
    R@5 (`--match name`, as `toolmesh router eval` counts them), how often the match is
    right, and route p50 / p95 (prompt embedding included).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data"
SHARED = REPO.parent / "shared" / "data" / "routing"
sys.path.insert(0, str(REPO))

from bench.router_examples import MemoEmbedder, _make_up_docs  # noqa: E402
from toolmesh.config import RouterConfig  # noqa: E402
from toolmesh.config.config_defaults import DEFAULT_ROUTER_THRESHOLD  # noqa: E402
from toolmesh.router.evaluate import Query, load_pool, load_queries  # noqa: E402
from toolmesh.router.routing import Router, RouteResult  # noqa: E402
from toolmesh.router.safety.effects import effect  # noqa: E402
from toolmesh.router.search.index import Candidate, FunctionIndex  # noqa: E402
from toolmesh.router.search.text import Document  # noqa: E402
from toolmesh.router.service import open_embedder  # noqa: E402

# How BFCL's read-style prompts were picked: they open as a question, or as a request to
# find, show, tell ... Not any "can you ...?", nor a question mark alone: BFCL writes most
# of its commands that way.
_ASKS = re.compile(
    r"^(?:is|are|was|were|does|do|did|has|have|which|where|when|why|who|what|what's|how|should)\b"
    r"|^(?:can|could|would) you (?:please )?(?:tell|find|show|give|list|search|look up|check|calculate|"
    r"compute|estimate|get me the|provide)\b",
    re.I,
)
READ_SET = (
    "BFCL prompts that open as a question (a wh-word, is/does/...) or ask to find, tell, show ...,"
    " of a function that changes no data (router/safety/effects.py), with one that does among their top 5"
)
COMMAND_SET = (
    "BFCL prompts of a function that changes data (router/safety/effects.py);"
    " 'expected': its same-name entries"
)
_DEPTH = 20  # as `toolmesh router eval --match name`: same-name entries count once in the top 5


def example_docs() -> list[Document]:
    from toolmesh.gateway.core.free_text import spec_documents
    from toolmesh.runtimes.functions.discovery import discover, import_module

    inventory = discover(import_module("examples.inventory"))[0]
    return _make_up_docs() + spec_documents([h.spec for h in inventory])


def routers(index: FunctionIndex) -> dict[str, Router]:
    before = Router(index, DEFAULT_ROUTER_THRESHOLD)
    before.safe_matches = False
    return {"before": before, "after": Router(index, DEFAULT_ROUTER_THRESHOLD)}


def changes(index: FunctionIndex, key: str | None) -> bool:
    if key is None:
        return False
    doc = index.document(key)
    return effect(doc, index.annotated(doc.namespace)).mutating


def read_table(
    label: str, index: FunctionIndex, cases: Sequence[dict[str, object]]
) -> list[dict[str, object]]:
    """Per kind of prompt: how many route to a function that changes data, how many right."""
    pair = routers(index)
    rows: dict[str, dict[str, int]] = {}
    for case in cases:
        prompt, expected = str(case["prompt"]), case["expected"]
        assert isinstance(expected, list)
        for kind in (str(case["kind"]), "all"):
            row = rows.setdefault(kind, {"prompts": 0})
            row["prompts"] += 1
            for name, router in pair.items():
                match = router.route(prompt).match
                row[f"{name} mutating"] = row.get(f"{name} mutating", 0) + changes(index, match)
                right = match in expected
                row[f"{name} right"] = row.get(f"{name} right", 0) + right
    total = rows.pop("all")
    if len(rows) > 1:  # one kind: its row is the total
        rows["all"] = total
    return [{"catalog": label, "kind": kind, **row} for kind, row in rows.items()]


def command_table(
    label: str, index: FunctionIndex, cases: Sequence[tuple[str, frozenset[str]]]
) -> dict[str, object]:
    pair = routers(index)
    right = {name: sum(router.route(p).match in keys for p, keys in cases) for name, router in pair.items()}
    return {
        "catalog": label,
        "prompts": len(cases),
        "before": f"{right['before']} ({100 * right['before'] / len(cases):.1f} %)",
        "after": f"{right['after']} ({100 * right['after'] / len(cases):.1f} %)",
    }


def first_hit(ranked: Sequence[Candidate], query: Query, names: dict[str, str], k: int = 5) -> int:
    """1-based rank of the first accepted candidate among the top k distinct names (0: none)."""
    seen: list[str] = []
    for candidate in ranked:
        name = names[candidate.key]
        if name in seen:
            continue
        seen.append(name)
        if len(seen) > k:
            return 0
        if query.accepts(candidate.key, "name"):
            return len(seen)
    return 0


@dataclass
class Tally:
    r1: int = 0
    r5: int = 0
    right: int = 0
    matched: int = 0
    ms: list[float] = field(default_factory=list)

    def add(self, result: RouteResult, query: Query, names: dict[str, str], ms: float) -> None:
        rank = first_hit(result.candidates, query, names)
        self.r1 += rank == 1
        self.r5 += rank > 0
        self.matched += result.match is not None
        self.right += result.match is not None and query.accepts(result.match, "name")
        self.ms.append(ms)


def bfcl_all(
    embedder: MemoEmbedder, index: FunctionIndex, pool: list[Document], queries: list[Query]
) -> list[dict[str, object]]:
    """Every BFCL prompt through both routers, alternating which goes first."""
    pair = routers(index)
    names = {doc.key: doc.name for doc in pool}
    tallies = {name: Tally() for name in pair}
    for number, query in enumerate(queries):
        order = list(pair.items()) if number % 2 == 0 else list(reversed(pair.items()))
        for name, router in order:
            embedder.memo.pop(query.prompt, None)  # each route embeds its prompt, as in production
            began = time.perf_counter()
            result = router.route(query.prompt, _DEPTH)
            tallies[name].add(result, query, names, (time.perf_counter() - began) * 1000)
    n = len(queries)
    base = float(np.percentile(tallies["before"].ms, 50))
    rows: list[dict[str, object]] = []
    for name, tally in tallies.items():
        p50 = float(np.percentile(tally.ms, 50))
        rows.append(
            {
                "router": name,
                "R@1": f"{100 * tally.r1 / n:.1f}",
                "R@5": f"{100 * tally.r5 / n:.1f}",
                "match right": f"{100 * tally.right / n:.1f} %",
                "match set": f"{100 * tally.matched / n:.1f} %",
                "route p50 ms": f"{p50:.2f}",
                "route p95 ms": f"{float(np.percentile(tally.ms, 95)):.2f}",
                "p50 vs before": f"{p50 / base:.2f}x",
            }
        )
    return rows


def write_bfcl_sets(index: FunctionIndex, queries: list[Query]) -> None:
    """Pick BFCL's read-style prompts (asked as a question, of a function that changes no data,
    with one that does among the top 5) and its commands (prompts of a function that changes
    data), and write them to bench/data."""
    router = routers(index)["before"]
    reads, commands = [], []
    for query in queries:
        expected = changes(index, query.expected)
        if expected:
            commands.append({"prompt": query.prompt, "expected": sorted({query.expected, *query.same_name})})
            continue
        if not _ASKS.search(query.prompt):
            continue
        top = router.route(query.prompt).candidates
        if any(changes(index, c.key) for c in top):
            reads.append({"kind": "question", "prompt": query.prompt, "expected": sorted(query.same_name)})
    source = "selected by bench/free_text_safety.py --write-bfcl-set from bfcl_pool_queries.jsonl"
    for name, about, prompts in (
        ("bfcl_read_prompts.json", f"{READ_SET}, {source}", reads),
        ("bfcl_command_prompts.json", f"{COMMAND_SET}, {source}", commands),
    ):
        (DATA / name).write_text(json.dumps({"about": about, "prompts": prompts}, indent=1) + "\n")
    print(f"{len(reads)} read-style and {len(commands)} command prompts written to {DATA}")


def markdown(rows: Sequence[dict[str, object]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows]
    return "\n".join(lines)


def load(name: str) -> list[dict[str, object]]:
    prompts: list[dict[str, object]] = json.loads((DATA / name).read_text())["prompts"]
    return prompts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write-bfcl-set", action="store_true")
    parser.add_argument("--skip-all", action="store_true", help="leave out table (c), all BFCL prompts")
    args = parser.parse_args()

    embedder = MemoEmbedder(open_embedder(RouterConfig()))
    examples = FunctionIndex(embedder)
    examples.sync(example_docs())
    pool = load_pool(args.data / "bfcl_pool.json")
    queries = load_queries(args.data / "bfcl_pool_queries.jsonl")
    bfcl = FunctionIndex(embedder)
    bfcl.sync(pool)
    if args.write_bfcl_set:
        write_bfcl_sets(bfcl, queries)
        return
    tables = {
        "(a) read-style prompts": read_table(
            "examples + inventory", examples, load("free_text_read_prompts.json")
        )
        + read_table("BFCL", bfcl, load("bfcl_read_prompts.json")),
        "(b) commands for functions that change data": [
            command_table(
                "examples + inventory",
                examples,
                [
                    (str(c["prompt"]), frozenset([str(c["expected"])]))
                    for c in load("free_text_imperative_prompts.json")
                ],
            ),
            command_table(
                "BFCL",
                bfcl,
                [(str(c["prompt"]), frozenset(c["expected"])) for c in load("bfcl_command_prompts.json")],  # type: ignore[arg-type]
            ),
        ],
    }
    if not args.skip_all:
        tables["(c) BFCL zero-shot, all prompts"] = bfcl_all(embedder, bfcl, pool, queries)
    if args.json:
        print(json.dumps(tables, indent=2))
        return
    for title, rows in tables.items():
        print(f"{title}\n\n{markdown(rows)}\n")


if __name__ == "__main__":
    main()
