"""The hybrid index and the router on a real ONNX session: ranking, threshold, incremental sync, cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmesh.config.config_defaults import DEFAULT_ROUTER_THRESHOLD
from toolmesh.router.embedding.cache import EmbeddingCache
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.routing import Router
from toolmesh.router.search.index import LEXICAL_WEIGHT, FunctionIndex
from toolmesh.router.search.text import Document
from toolmesh.router.sessions import SessionStore

DOCS = [
    Document("get_weather", "get_weather", "Current weather conditions for a city."),
    Document("convert_currency", "convert_currency", "Convert an amount of money between currencies."),
    Document("order_supplies", "order_supplies", "Order office supplies such as paper, pens and toner."),
    Document("send_email", "send_email", "Send an email message to someone."),
    Document("lookup_kx7_record", "lookup_kx7_record", "Look up a record in the archive."),
    Document("lookup_qp3_record", "lookup_qp3_record", "Look up a record in the archive."),
]


@pytest.fixture
def index(int8_embedder: OnnxEmbedder) -> FunctionIndex:
    index = FunctionIndex(int8_embedder)
    index.sync(DOCS)
    return index


def test_dense_similarity_finds_functions_without_shared_words(index: FunctionIndex) -> None:
    best = index.search("Is it going to rain in Paris?", 3)[0]
    assert best.key == "get_weather" and best.lexical == 0 and best.dense > 0.2


def test_shared_rare_words_decide_between_near_twins(index: FunctionIndex) -> None:
    ranked = index.search("look up the kx7 record", 2)
    assert [c.key for c in ranked] == ["lookup_kx7_record", "lookup_qp3_record"]
    first, second = ranked
    assert first.lexical > second.lexical
    assert first.score == pytest.approx(first.dense + LEXICAL_WEIGHT * first.lexical, abs=1e-5)


def test_search_filters_and_boosts(index: FunctionIndex) -> None:
    hidden = index.search("weather in Oslo", 6, allowed=lambda key: key != "get_weather")
    assert "get_weather" not in [c.key for c in hidden] and len(hidden) == 5
    boosted = index.search("weather in Oslo", 1, boosts={"send_email": 5.0})
    assert boosted[0].key == "send_email"
    assert index.search("anything", 0) == []


def test_the_threshold_says_when_no_function_fits(index: FunctionIndex) -> None:
    router = Router(index, DEFAULT_ROUTER_THRESHOLD)
    assert router.route("What's the weather like in Berlin today?").match == "get_weather"
    assert router.route("order more toner and printer paper").match == "order_supplies"
    unrelated = router.route("bake a chocolate cake for my grandmother", k=3)
    assert unrelated.match is None and len(unrelated.candidates) == 3
    assert unrelated.candidates[0].score < DEFAULT_ROUTER_THRESHOLD
    document = unrelated.to_dict()
    assert document["match"] is None and set(document["candidates"][0]) == {"name", "score", "scores"}
    top = unrelated.candidates[0]
    assert document["candidates"][0]["scores"] == {
        "dense": round(top.dense, 4),
        "lexical": round(top.lexical, 4),
    }


def test_recent_functions_win_near_ties(index: FunctionIndex, tmp_path: Path) -> None:
    # Two versions of one function: the same text, so the same score.
    twins = [
        Document(f"translate_v{i}", "translate", "Translate text into another language.") for i in (1, 2)
    ]
    index.sync([*DOCS, *twins])
    sessions = SessionStore(tmp_path / "s.sqlite3", ttl=60, max_sessions=10, max_turns=10)
    router = Router(index, DEFAULT_ROUTER_THRESHOLD, sessions)
    prompt = "translate this into French"
    before = router.route(prompt, 2)
    assert before.candidates[0].score == pytest.approx(before.candidates[1].score, abs=1e-6)
    loser = before.candidates[1].key
    sessions.record("s1", "earlier", loser, {}, None)
    assert router.route(prompt, 2, session_id="s1").candidates[0].key == loser
    assert router.route(prompt, 2, session_id="other").candidates[0].key == before.candidates[0].key
    clear = router.route("send an email to my boss", 1, session_id="s1")
    assert clear.match == "send_email", "a bonus only settles near-ties"


def test_the_index_follows_catalog_changes_incrementally(int8_embedder: OnnxEmbedder) -> None:
    index = FunctionIndex(int8_embedder)
    first = index.sync(DOCS[:4])
    # Two texts per function: the whole of it, and its description.
    assert (first.added, first.updated, first.removed, first.embedded) == (4, 0, 0, 8)
    assert index.sync(DOCS[:4]).embedded == 0, "nothing changed, nothing embedded"
    renamed = Document("order_supplies", "order_supplies", "Order groceries: milk, bread and eggs.")
    change = index.sync([DOCS[1], renamed, DOCS[3], DOCS[4]])
    assert (change.added, change.updated, change.removed, change.embedded) == (1, 1, 1, 4)
    assert "get_weather" not in index and len(index) == 4
    assert index.search("buy milk and eggs", 1)[0].key == "order_supplies"
    assert index.search("weather in Rome", 4)[0].key != "get_weather"
    index.sync([*DOCS, renamed])  # the removed slot is reused
    assert len(index) == 6 and index.search("weather in Rome", 1)[0].key == "get_weather"


def test_function_embeddings_are_cached_on_disk_by_text_hash(
    int8_embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    path = tmp_path / "embeddings.sqlite3"
    first = FunctionIndex(int8_embedder, EmbeddingCache(path))
    assert first.sync(DOCS).embedded == 11, "two texts each, one shared by the kx7/qp3 twins"
    # A restart: a new process opens the same file and embeds nothing it has seen.
    restarted = FunctionIndex(int8_embedder, EmbeddingCache(path))
    assert restarted.sync(DOCS).embedded == 0
    assert len(EmbeddingCache(path)) == 11
    assert restarted.search("rain tomorrow?", 1)[0].key == "get_weather"
    edited = Document("send_email", "send_email", "Send an email message with attachments.")
    assert restarted.sync([*DOCS[:3], edited]).embedded == 2


# Short prompts for the functions `toolmesh up` serves (examples/ and the test tools), and
# prompts none of them fits: the default threshold was chosen to split these (bench/RESULTS.md).
FITS = [
    "What's the weather like in Oslo?",
    "weather in Rome",
    "add 2 and 3",
    "What is 2 ** 10 / 4",
    "order 2 tents",
    "track order ord-1001",
    "cancel my order ord-1002",
    "set a timer for 5 minutes",
    "email bob@example.com",
    "book a flight from Oslo to Rome tomorrow",
    "will it rain in Paris this week",
    "what should I pack for Tokyo",
    "convert 30 celsius to fahrenheit",
    "divide 10 by 4",
    "count down from 10",
    "summarise this text: the cat sat on the mat",
]
NO_FIT = [
    "bake a chocolate cake",
    "tell me a joke",
    "hello",
    "who won the world cup in 2018",
    "play some jazz music",
    "what's the meaning of life",
    "how tall is Mount Everest",
    "turn off the living room lights",
    "call my mom",
    "recommend a good novel",
    "how do I fix a flat bicycle tire",
    "thanks!",
]


def test_the_default_threshold_splits_fitting_from_unrelated_prompts(int8_embedder: OnnxEmbedder) -> None:
    from toolmesh.config import EXAMPLE_MODULES
    from toolmesh.gateway.core.free_text import spec_documents
    from toolmesh.runtimes.functions.registry import Registry

    index = FunctionIndex(int8_embedder)
    index.sync(spec_documents(Registry.from_modules(["router_tools", *EXAMPLE_MODULES]).specs()))
    router = Router(index, DEFAULT_ROUTER_THRESHOLD)
    matched = sum(router.route(p, 1).match is not None for p in FITS)
    refused = sum(router.route(p, 1).match is None for p in NO_FIT)
    assert matched >= 0.9 * len(FITS) and refused >= 0.9 * len(NO_FIT)
