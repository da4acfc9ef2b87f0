"""Examples learned from use: bounded, per function version, persisted, applied to routing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolmesh.cli import main
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.index import FunctionIndex
from toolmesh.router.learning import LearnedExamples
from toolmesh.router.routing import Router
from toolmesh.router.service import LEARNED_FILE
from toolmesh.router.text import Document

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
