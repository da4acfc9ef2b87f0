"""Examples learned from use: bounded, per function version, persisted, applied to routing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from toolmesh.cli import main
from toolmesh.router import learning
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.learning import LearnedExamples, RecentRoutings, Routed, near_duplicates, normalised
from toolmesh.router.routing import Router, version
from toolmesh.router.search.index import FunctionIndex
from toolmesh.router.search.text import Document
from toolmesh.router.search.whitening import Fitted, Snapshot
from toolmesh.router.service import LEARNED_FILE

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
    routed = router.routed(routing.routing_id)
    assert routed is not None and routed.prompt == PROMPT
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


def test_the_change_log_tells_each_connection_what_others_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, theirs = LearnedExamples(tmp_path / LEARNED_FILE), LearnedExamples(tmp_path / LEARNED_FILE)
    assert ours.changed() == []
    theirs.add("f", "v1", "is it raining in Oslo", "alice")
    theirs.add("g", "v1", "send the report", "alice")
    theirs.add("f", "v1", "umbrella in Bergen?", "alice")
    assert ours.changed() == ["f", "g"]
    assert ours.changed() == []
    ours.add("g", "v1", "mail Bob", "bob")  # its own change: already applied by whoever made it
    assert ours.changed() == [] and theirs.changed() == ["g"]
    assert theirs.remove("f", "no such prompt") == 0
    assert ours.changed() == []
    assert theirs.remove("f", "umbrella in Bergen?") == 1
    assert ours.changed() == ["f"]
    # Too far behind (the log keeps the last CHANGES_KEPT): every function must be read again.
    monkeypatch.setattr(learning, "CHANGES_KEPT", 2)
    for i in range(4):
        theirs.add("h", "v1", f"prompt {i}", "alice")
    assert ours.changed() is None
    assert ours.changed() == []
    ours.close()
    theirs.close()


def test_a_removal_by_the_cli_in_another_process_reaches_the_next_route(
    int8_embedder: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    router = Router(FunctionIndex(int8_embedder), 0.3, learned=store)
    router.sync(DOCS)
    # A question for send_email is a match the safety rules decline (router/safety/rules.py); these
    # tests are about what learning does to the ranking, so they route without the rules.
    router.safe_matches = False
    router.learn("lookup_b", PROMPT, "alice")
    assert router.route(PROMPT).match == "lookup_b"
    remove = [sys.executable, "-m", "toolmesh", "router", "examples", "remove", "lookup_b"]
    done = subprocess.run(
        [*remove, "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    after = router.route(PROMPT)
    assert router.index.learned("lookup_b") == [] and after.match != "lookup_b"
    # And an example another process adds counts on the next route too.
    other = LearnedExamples(tmp_path / LEARNED_FILE)
    other.add("send_email", version(router.document("send_email")), PROMPT, "bob")
    assert router.route(PROMPT).match == "send_email"
    # A router further behind than the log keeps reads every function again.
    monkeypatch.setattr(learning, "CHANGES_KEPT", 1)
    other.add("lookup_a", version(router.document("lookup_a")), "unrelated", "bob")
    other.remove("lookup_a")
    other.remove("send_email")
    assert router.route(PROMPT).match != "send_email" and router.index.learned("send_email") == []
    other.close()
    store.close()


def test_near_duplicates_are_the_same_text_or_a_close_embedding(int8_embedder: OnnxEmbedder) -> None:
    assert normalised("  How many PARCELS, are left?! ") == "how many parcels are left"
    assert normalised("Café") == normalised("cafe")
    learned = [
        "How many parcels are left in the warehouse",
        "how many parcels are left in the warehouse please",
        "send the quarterly report to Bob",
        "what's the weather in Oslo?",
    ]
    assert near_duplicates(PROMPT, learned, int8_embedder) == learned[:2]
    assert near_duplicates(PROMPT, [], int8_embedder) == []


def test_routings_keep_the_prompt_and_the_match() -> None:
    routings = RecentRoutings(size=2)
    routings.remember("r1", "p1", "f")
    routings.remember("r2", "p2")
    assert routings.recall("r1") == Routed("p1", "f") and routings.recall("r2") == Routed("p2", None)
    routings.remember("r3", "p3", "g")
    assert routings.recall("r1") is None and routings.recall("r3") == Routed("p3", "g")


def test_feedback_that_corrects_moves_the_prompt_to_the_right_function(
    int8_embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    """The prompt was wrongly learned for send_email (with a rewording, and one right example):
    what the wrong match taught goes, the right example stays, and the prompt routes to lookup_b."""
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    router = Router(FunctionIndex(int8_embedder), 0.3, learned=store)
    router.sync(DOCS)
    # A question for send_email is a match the safety rules decline (router/safety/rules.py); these
    # tests are about what learning does to the ranking, so they route without the rules.
    router.safe_matches = False
    for prompt in ("email Bob the quarterly report", "How many parcels are left in the warehouse", PROMPT):
        router.learn("send_email", prompt, "alice")
    wrong = router.route(PROMPT)
    assert wrong.match == "send_email"
    routed = router.routed(wrong.routing_id)
    assert routed == Routed(PROMPT, "send_email")
    removed = router.unlearn("send_email", routed.prompt)
    assert sorted(removed) == sorted([PROMPT, "How many parcels are left in the warehouse"])
    assert router.index.learned("send_email") == ["email Bob the quarterly report"]
    router.learn("lookup_b", routed.prompt, "alice")
    assert router.route(PROMPT).match == "lookup_b"
    assert router.route("email Bob the quarterly report").match == "send_email"
    store.close()


def test_negative_feedback_alone_stops_the_wrong_match(int8_embedder: OnnxEmbedder, tmp_path: Path) -> None:
    store = LearnedExamples(tmp_path / LEARNED_FILE)
    router = Router(FunctionIndex(int8_embedder), 0.3, learned=store)
    router.sync(DOCS)
    # A question for send_email is a match the safety rules decline (router/safety/rules.py); these
    # tests are about what learning does to the ranking, so they route without the rules.
    router.safe_matches = False
    before = router.route(PROMPT)
    router.learn("send_email", PROMPT, "alice")
    wrong = router.route(PROMPT)
    assert before.match != "send_email" and wrong.match == "send_email"
    assert router.unlearn("send_email", PROMPT) == [PROMPT]
    after = router.route(PROMPT)
    assert after.match != "send_email" and after.candidates[0].key != "send_email"
    assert store.listing("send_email") == []
    # Nothing left to undo: a second time removes nothing.
    assert router.unlearn("send_email", PROMPT) == []
    store.close()
