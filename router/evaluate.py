"""Offline evaluation: recall@1, recall@k, MRR and latency of routing a query set over a pool.

Reads the format of the shared BFCL routing set: a pool ``{"functions": [{"pool_id",
"name", "description", "parameters"}]}`` and JSON-lines queries ``{"prompt",
"expected_pool_id", "same_name_pool_ids"}``. With ``match="name"`` any pool entry
in ``same_name_pool_ids`` counts as a hit (the pool holds several functions
with the same name and different descriptions).

A pool entry may carry ``"examples": [prompt, ...]``; `with_examples` adds up to N more
per function from a training query file (same format as the queries), to measure how
routing improves with examples while the evaluation prompts stay held out.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from toolmesh.config.config_defaults import DEFAULT_ROUTER_THRESHOLD
from toolmesh.router.embedding.embedder import Embedder
from toolmesh.router.search.index import Candidate, FunctionIndex
from toolmesh.router.search.text import Document

Match = Literal["id", "name"]

#: A query's "no fit" twin is the same query with its function, every function of the same
#: name and every near-duplicate (embedding cosine at least this) taken out of the catalog:
#: the threshold should turn it away.
NEAR_DUPLICATE = 0.6


class EvalInputError(Exception):
    """A pool or query file is missing or malformed; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class Query:
    prompt: str
    expected: str
    same_name: frozenset[str]

    def accepts(self, key: str, match: Match) -> bool:
        return key == self.expected or (match == "name" and key in self.same_name)


@dataclass(frozen=True, slots=True)
class EvalReport:
    functions: int
    queries: int
    k: int
    match: str
    recall_at_1: float
    recall_at_k: float
    mrr: float
    latency_p50_ms: float
    latency_p95_ms: float
    index_build_s: float
    #: The "no function fits" threshold evaluated, the share of correct top matches that clear
    #: it, and the share of "no fit" twins it turns away.
    threshold: float
    threshold_keeps: float
    threshold_rejects: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        rows = [
            ("functions", f"{self.functions}"),
            ("queries", f"{self.queries}"),
            ("match", self.match),
            ("R@1", f"{100 * self.recall_at_1:.1f}"),
            (f"R@{self.k}", f"{100 * self.recall_at_k:.1f}"),
            ("MRR", f"{self.mrr:.3f}"),
            ("route p50 (ms)", f"{self.latency_p50_ms:.2f}"),
            ("route p95 (ms)", f"{self.latency_p95_ms:.2f}"),
            ("index build (s)", f"{self.index_build_s:.2f}"),
            ("threshold", f"{self.threshold:.3f}"),
            ("  keeps correct matches", f"{100 * self.threshold_keeps:.1f}%"),
            ("  rejects no-fit twins", f"{100 * self.threshold_rejects:.1f}%"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise EvalInputError(f"{path}: {exc.strerror}") from None
    except ValueError as exc:
        raise EvalInputError(f"{path}: not valid JSON: {exc}") from None


def load_pool(path: Path) -> list[Document]:
    data = _load_json(path)
    functions = data.get("functions") if isinstance(data, dict) else None
    if not isinstance(functions, list):
        raise EvalInputError(f"{path}: expected an object with a 'functions' list")
    docs = []
    for i, entry in enumerate(functions):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise EvalInputError(f"{path}: functions[{i}] needs at least a string 'name'")
        parameters = entry.get("parameters")
        examples = entry.get("examples") or []
        if not isinstance(examples, list) or not all(isinstance(e, str) for e in examples):
            raise EvalInputError(f"{path}: functions[{i}].examples must be a list of strings")
        docs.append(
            Document(
                key=str(entry.get("pool_id", entry["name"])),
                name=entry["name"],
                description=str(entry.get("description") or ""),
                parameters=parameters if isinstance(parameters, dict) else {},
                examples=tuple(examples),
            )
        )
    return docs


def with_examples(pool: Sequence[Document], training: Sequence[Query], per_function: int) -> list[Document]:
    """`pool` with up to `per_function` training prompts added to each function's examples
    (in file order); prompts that name a function outside the pool are skipped."""
    extra: dict[str, list[str]] = {}
    for query in training:
        found = extra.setdefault(query.expected, [])
        if len(found) < per_function:
            found.append(query.prompt)
    return [
        dataclasses.replace(doc, examples=(*doc.examples, *extra[doc.key])) if doc.key in extra else doc
        for doc in pool
    ]


def load_queries(path: Path) -> list[Query]:
    queries = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise EvalInputError(f"{path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            queries.append(
                Query(
                    prompt=str(entry["prompt"]),
                    expected=str(entry["expected_pool_id"]),
                    same_name=frozenset(map(str, entry.get("same_name_pool_ids") or ())),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise EvalInputError(f"{path}:{number}: needs 'prompt' and 'expected_pool_id' ({exc})") from None
    return queries


def _first_hit(ranked: Sequence[Candidate], query: Query, match: Match, k: int, names: dict[str, str]) -> int:
    """1-based rank of the first accepted candidate within the top k (0: none). With
    match="name", entries sharing a name count once: a tool list cannot hold two of them."""
    seen: set[str] = set()
    rank = 0
    for candidate in ranked:
        name = names[candidate.key] if match == "name" else candidate.key
        if name in seen:
            continue
        seen.add(name)
        rank += 1
        if rank > k:
            return 0
        if query.accepts(candidate.key, match):
            return rank
    return 0


def _share(values: Sequence[float], accept: Callable[[float], bool]) -> float:
    return sum(1 for v in values if accept(v)) / len(values) if values else 0.0


def evaluate(
    embedder: Embedder,
    pool: Sequence[Document],
    queries: Sequence[Query],
    *,
    k: int = 5,
    match: Match = "name",
    threshold: float = DEFAULT_ROUTER_THRESHOLD,
    index: FunctionIndex | None = None,
) -> EvalReport:
    """Index `pool` (timed), route every query one at a time (timed), and score the rankings."""
    started = time.perf_counter()
    index = index if index is not None else FunctionIndex(embedder)
    index.sync(pool)
    build = time.perf_counter() - started
    names = {doc.key: doc.name for doc in pool}
    slot_keys = index.slot_keys()
    depth = 4 * k if match == "name" else k
    hits_1 = hits_k = 0
    reciprocal = 0.0
    latencies = []
    positives: list[float] = []
    negatives: list[float] = []
    for query in queries:
        began = time.perf_counter()
        vector = embedder.embed([query.prompt])[0]
        ranked = index.search(query.prompt, depth, query_vector=vector)
        latencies.append(time.perf_counter() - began)
        rank = _first_hit(ranked, query, match, k, names)
        if rank:
            hits_1 += rank == 1
            hits_k += 1
            reciprocal += 1.0 / rank
        if rank == 1:
            positives.append(ranked[0].score)
        if query.expected in index:
            gone = index.similar(query.expected, NEAR_DUPLICATE)
            fused = index.score_all(query.prompt, vector)[0]
            remaining = [
                float(score)
                for key, score in zip(slot_keys, fused, strict=True)
                if key is not None and key not in gone and not query.accepts(key, "name")
            ]
            if remaining:
                negatives.append(max(remaining))
    n = max(len(queries), 1)
    ms = np.array(latencies or [0.0]) * 1000
    return EvalReport(
        functions=len(pool),
        queries=len(queries),
        k=k,
        match=match,
        recall_at_1=hits_1 / n,
        recall_at_k=hits_k / n,
        mrr=reciprocal / n,
        latency_p50_ms=float(np.percentile(ms, 50)),
        latency_p95_ms=float(np.percentile(ms, 95)),
        index_build_s=build,
        threshold=threshold,
        threshold_keeps=_share(positives, lambda score: score >= threshold),
        threshold_rejects=_share(negatives, lambda score: score < threshold),
    )
