"""Where "the same request" ends: the cosine from which feedback removes a learned example as a
near-duplicate of a wrongly routed prompt (router/learning.py NEAR_DUPLICATE_COSINE).

    .venv/bin/python bench/router_unlearn.py [--json]

Two populations, in the router's embedding (the default int8 model), on the prompts of
BFCL's pool queries and APIBench TorchHub's training file (../shared/data/routing):

- **different requests, one function**: every pair of distinct prompts expected to route to
  the same function. Feedback must leave these alone (they are other, right, examples).
- **rewordings**: each prompt against itself reworded as a user would retype it: lower-cased
  without punctuation, one word dropped, two neighbouring words swapped, "please" added,
  "can you" put in front. Feedback should remove these.

The threshold belongs above the first population's high percentiles and below the second's low ones.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from toolmesh.config import RouterConfig
from toolmesh.router.learning import NEAR_DUPLICATE_COSINE
from toolmesh.router.service import open_embedder

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "routing"
FILES = ("bfcl_pool_queries.jsonl", "apibench_torchhub_train.jsonl")
PERCENTILES = (1, 5, 50, 95, 99, 99.9)


def rewordings(prompt: str, rng: random.Random) -> list[str]:
    words = prompt.split()
    dropped = words[:]
    if len(words) > 3:
        del dropped[rng.randrange(1, len(words))]
    swapped = words[:]
    if len(words) > 3:
        i = rng.randrange(1, len(words) - 1)
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    return [
        re.sub(r"[^\w\s]", "", prompt).lower(),
        " ".join(dropped),
        " ".join(swapped),
        prompt.rstrip(".?!") + " please",
        "can you " + prompt[:1].lower() + prompt[1:],
    ]


def measure(name: str, embedder: object, limit: int) -> dict[str, dict[str, float]]:
    rows = [json.loads(line) for line in (SHARED / name).read_text().splitlines() if line.strip()]
    by_function: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_function[row["expected_pool_id"]].append(row["prompt"])
    prompts = sorted({row["prompt"] for row in rows})[:limit]
    rng = random.Random(7)
    variants = {p: rewordings(p, rng) for p in prompts}
    texts = sorted(
        {
            *prompts,
            *(v for vs in variants.values() for v in vs),
            *(p for ps in by_function.values() for p in ps),
        }
    )
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))  # type: ignore[attr-defined]
    same_function = [
        float(vectors[a] @ vectors[b])
        for ps in by_function.values()
        for a, b in itertools.combinations(sorted(set(ps)), 2)
    ]
    reworded = [float(vectors[p] @ vectors[v]) for p in prompts for v in variants[p] if v != p]
    table = {}
    for label, values in (("different requests, one function", same_function), ("rewordings", reworded)):
        cut = np.percentile(values, PERCENTILES)
        above = float(np.mean(np.asarray(values) >= NEAR_DUPLICATE_COSINE))
        table[label] = {
            "pairs": len(values),
            **{f"p{q:g}": round(float(c), 3) for q, c in zip(PERCENTILES, cut, strict=True)},
            f">= {NEAR_DUPLICATE_COSINE}": f"{above:.1%}",
        }
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--prompts", type=int, default=600, help="prompts reworded per file (default %(default)s)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embedder = open_embedder(RouterConfig())
    report = {name: measure(name, embedder, args.prompts) for name in FILES}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    header = ["file", "pairs of", "n", *(f"p{q:g}" for q in PERCENTILES), f">= {NEAR_DUPLICATE_COSINE}"]
    print(" | ".join(header))
    for name, table in report.items():
        for label, row in table.items():
            print(" | ".join([name.split("_")[0], label, *(str(v) for v in row.values())]))


if __name__ == "__main__":
    main()
