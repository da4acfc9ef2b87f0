"""Example prompts as views of a function, on a real ONNX session: authored, learned, evaluated."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolmesh.cli import main
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.evaluate import EvalInputError, Query, load_pool, with_examples
from toolmesh.router.search.index import FunctionIndex
from toolmesh.router.search.text import Document

TWINS = [
    Document("lookup_a", "lookup_a", "Look up a record in the archive."),
    Document("lookup_b", "lookup_b", "Look up a record in the archive."),
    Document("send_email", "send_email", "Send an email message to someone."),
]
DATA = Path(__file__).parent / "data"


def test_an_example_decides_between_functions_the_description_cannot(int8_embedder: OnnxEmbedder) -> None:
    prompt = "find last march's invoice from the supplier"
    plain = FunctionIndex(int8_embedder)
    plain.sync(TWINS)
    tied = plain.search(prompt, 2)
    assert abs(tied[0].score - tied[1].score) < 0.02
    index = FunctionIndex(int8_embedder)
    examples = ("show me the invoice the supplier sent in March",)
    index.sync(
        [TWINS[0], Document("lookup_b", "lookup_b", TWINS[1].description, examples=examples), TWINS[2]]
    )
    ranked = index.search(prompt, 3)
    assert ranked[0].key == "lookup_b" and ranked[0].score > ranked[1].score + 0.1
    # A function without examples has the dense score it had without any examples anywhere
    # (its BM25 score moves a little: the corpus's average length changed; and int8 dynamic
    # quantisation makes a vector depend slightly on the batch it was embedded in).
    before = {c.key: c.dense for c in plain.search("email my boss", 3)}
    after = {c.key: c.dense for c in index.search("email my boss", 3)}
    assert after["send_email"] == pytest.approx(before["send_email"], abs=5e-3)
    assert after["lookup_a"] == pytest.approx(before["lookup_a"], abs=5e-3)


def test_learned_examples_route_and_are_dropped_when_the_function_changes(
    int8_embedder: OnnxEmbedder,
) -> None:
    index = FunctionIndex(int8_embedder)
    index.sync(TWINS)
    assert not index.set_learned("nope", ["x"])
    assert index.set_learned("lookup_a", ["which parcels are still in the warehouse", "stock left in depot"])
    assert index.learned("lookup_a") == ["which parcels are still in the warehouse", "stock left in depot"]
    assert index.search("how many parcels are left in the warehouse?", 1)[0].key == "lookup_a"
    # New author examples keep what was learned; a changed description drops it.
    index.sync([Document("lookup_a", "lookup_a", TWINS[0].description, examples=("old files",)), *TWINS[1:]])
    assert len(index.learned("lookup_a")) == 2
    index.sync([Document("lookup_a", "lookup_a", "Look up an order."), *TWINS[1:]])
    assert index.learned("lookup_a") == []
    assert index.search("how many parcels are left in the warehouse?", 2)[0].dense < 0.5
    index.set_learned("lookup_b", ["q"])
    index.sync(TWINS[:1])
    assert index.learned("lookup_b") == [] and "lookup_b" not in index


def test_pool_examples_and_training_prompts(tmp_path: Path) -> None:
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps({"functions": [{"pool_id": "p0", "name": "f", "examples": ["hi"]}]}))
    docs = load_pool(pool)
    assert docs[0].examples == ("hi",)
    training = [Query(f"q{i}", "p0", frozenset()) for i in range(5)] + [Query("z", "gone", frozenset())]
    assert with_examples(docs, training, 2)[0].examples == ("hi", "q0", "q1")
    pool.write_text(json.dumps({"functions": [{"name": "f", "examples": "hi"}]}))
    with pytest.raises(EvalInputError, match=r"functions\[0\].examples"):
        load_pool(pool)


def test_eval_takes_examples_from_a_training_file(
    router_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    functions = [{"pool_id": d.key, "name": d.name, "description": d.description} for d in TWINS]
    (tmp_path / "pool.json").write_text(json.dumps({"functions": functions}))
    asks = ["find last march's invoice from the supplier", "the supplier's invoice for April, please"]
    (tmp_path / "eval.jsonl").write_text(
        "\n".join(json.dumps({"prompt": p, "expected_pool_id": "lookup_b"}) for p in asks)
    )
    teach = ["show me the invoice the supplier sent in March", "supplier invoices from last year", "unused"]
    (tmp_path / "train.jsonl").write_text(
        "\n".join(json.dumps({"prompt": p, "expected_pool_id": "lookup_b"}) for p in teach)
    )
    args = [
        "router",
        "eval",
        "--catalog",
        str(tmp_path / "pool.json"),
        "--queries",
        str(tmp_path / "eval.jsonl"),
    ]
    args += ["--cache-dir", str(router_cache), "--json", "--match", "id", "--k", "1"]
    assert main(args) == 0
    zero_shot = json.loads(capsys.readouterr().out)
    assert main([*args, "--examples-from", str(tmp_path / "train.jsonl"), "--k-examples", "2"]) == 0
    learned = json.loads(capsys.readouterr().out)
    assert zero_shot["recall_at_1"] < 1 and learned["recall_at_1"] == 1
    assert main([*args, "--examples-from", str(tmp_path / "train.jsonl"), "--k-examples", "-1"]) == 2


def test_a_large_catalog_scores_a_shortlist_and_keeps_the_top() -> None:
    from toolmesh.router.search.views import EXACT_ROWS, ExampleViews

    rng = np.random.default_rng(7)
    functions, per = 700, 8
    assert functions * per > EXACT_ROWS
    views = ExampleViews(32)
    for slot in range(functions):
        rows = rng.normal(size=(per, 32)).astype(np.float32)
        views.set(slot, rows / np.linalg.norm(rows, axis=1, keepdims=True))
    query = rng.normal(size=32).astype(np.float32)
    query /= np.linalg.norm(query)
    dense = rng.normal(scale=0.1, size=functions).astype(np.float32)
    exact_best, centroid = views.scores(query, functions)  # no description scores: exact
    fast_best, fast_centroid = views.scores(query, functions, dense)
    assert np.array_equal(centroid, fast_centroid)
    exact_top = np.argsort(-(dense + exact_best + centroid))[:10]
    fast_top = np.argsort(-(dense + fast_best + centroid))[:10]
    assert list(fast_top) == list(exact_top)
    assert np.allclose(fast_best[exact_top], exact_best[exact_top])
