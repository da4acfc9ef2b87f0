"""Examples learned from use: bounded, per function version, persisted, applied to routing."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from toolmesh.cli import main
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.index import FunctionIndex
from toolmesh.router.learning import LearnedExamples
from toolmesh.router.routing import Router
from toolmesh.router.service import LEARNED_FILE
from toolmesh.router.text import Document
from toolmesh.router.whitening import Fitted, Snapshot

DOCS = [
    Document("lookup_a", "lookup_a", "Look up a record in the archive."),
    Document("lookup_b", "lookup_b", "Look up a record in the archive."),
    Document("send_email", "send_email", "Send an email message to someone."),
]
PROMPT = "how many parcels are left in the warehouse?"


def test_the_store_keeps_the_newest_few_per_version(tmp_path: Path) -> None:
    store = LearnedExamples(tmp_path / LEARNED_FILE, max_per_function=3)
    for i in range(5):
        store.add("f", "v1", f"prompt {i}", "alice")
    assert store.add("f", "v1", "prompt 2", "bob") == ["prompt 2", "prompt 4", "prompt 3"]
    store.add("f", "v0", "old wording", "alice")
    assert store.current({"f": "v1"}) == {"f": ["prompt 2", "prompt 4", "prompt 3"]}
    assert store.current({"f": "v2"}) == {}
    assert len(store.listing("f")) == 4 and store.listing("g") == []
    assert store.remove("f", "prompt 4") == 1 and store.remove("f") == 3
    store.close()


def test_router_learns_persists_and_forgets(int8_embedder: OnnxEmbedder, tmp_path: Path) -> None:
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    router = Router(FunctionIndex(int8_embedder), 0.3, learned=store)
    router.sync(DOCS)
    before = {c.key: c.score for c in router.route(PROMPT, 3).candidates}
    routing = router.route(PROMPT)
    assert router.routed_prompt(routing.routing_id) == PROMPT
    assert router.learn("lookup_b", PROMPT, "alice") == [PROMPT]
    assert router.learn("nope", PROMPT, "alice") is None
    after = router.route("parcels left in the warehouse", 3)
    assert after.candidates[0].key == "lookup_b"
    assert after.candidates[0].score > before["lookup_b"] + 0.1
    # A new router on the same store (a restart) starts with what was learned.
    again = Router(FunctionIndex(int8_embedder), 0.3, learned=store)
    again.sync(DOCS)
    assert again.index.learned("lookup_b") == [PROMPT]
    # A function whose description changed starts afresh.
    changed = [DOCS[0], Document("lookup_b", "lookup_b", "Look up an invoice."), DOCS[2]]
    again.sync(changed)
    assert again.index.learned("lookup_b") == []
    assert router.forget("lookup_b") == 1 and router.index.learned("lookup_b") == []
    store.close()


SPECIES = [
    Document(
        f"classify_{kind}",
        f"classify_{kind}",
        f"Identify the species of a {kind} in a photo.",
        examples=(f"which {kind} is in this picture?", f"{kind} species from photo", f"name this {kind}"),
    )
    for kind in ("bird", "flower", "mushroom")
]


def test_no_route_waits_for_the_whitening_to_be_fitted(
    int8_embedder: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Learning changes the examples enough to fit the whitening again (one prompt is > 10 %
    of nine rows): the fit runs in a thread of its own; meanwhile the learned prompt already
    counts, with the map in use; then the new map is used, and scores are exactly those of an
    index built afresh with the same examples."""
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    router = Router(FunctionIndex(int8_embedder), 0.3, learned=store)
    router.sync(SPECIES)
    views = router.index._views
    assert router.fitter is None and views._whitening is not None  # fitted while syncing
    fitted_at_sync = views._whitening

    release = threading.Event()
    real_fit = Snapshot.fit

    def slow_fit(snapshot: Snapshot) -> Fitted:
        assert release.wait(30)
        return real_fit(snapshot)

    monkeypatch.setattr(Snapshot, "fit", slow_fit)
    prompt = "what is the little brown bird singing on my roof?"
    router.learn("classify_bird", prompt, "alice")
    assert router.fitter is not None and router.fitter.is_alive()
    with ThreadPoolExecutor(1) as pool:  # a route that waited for the fit would never end
        routed = pool.submit(router.route, prompt, 3).result(timeout=10)
    assert routed.candidates[0].key == "classify_bird"
    assert views._whitening is fitted_at_sync
    best, _ = views.scores(int8_embedder.embed([prompt])[0], 3)
    assert best[router.index.slot_keys().index("classify_bird")] > 0.99  # the prompt is an example now

    release.set()
    router.fitter.join(10)
    assert not router.fitter.is_alive() and views._whitening is not fitted_at_sync
    fresh = FunctionIndex(int8_embedder)
    fresh.sync(SPECIES)
    fresh.set_learned("classify_bird", [prompt])
    for query in (prompt, "a red flower by the road", "is this toadstool edible"):
        ours = dict(zip(router.index.slot_keys(), router.index.score_all(query)[0], strict=True))
        theirs = dict(zip(fresh.slot_keys(), fresh.score_all(query)[0], strict=True))
        assert all(np.isclose(ours[k], theirs[k], atol=1e-5) for k in theirs)
    store.close()


def test_examples_command_lists_and_removes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    store.add("get_weather", "v1", "is it raining in Oslo", "alice")
    store.add("get_weather", "v1", "umbrella in Bergen?", "alice")
    store.close()
    assert main(["router", "examples", "list", "--data-dir", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["prompt"] for row in listed] == ["umbrella in Bergen?", "is it raining in Oslo"]
    remove = ["router", "examples", "remove", "get_weather", "--prompt", "umbrella in Bergen?"]
    assert main([*remove, "--data-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == 1
    assert main([*remove, "--data-dir", str(tmp_path)]) == 1
    capsys.readouterr()
    assert main(["router", "examples", "list", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count("\n") == 1
