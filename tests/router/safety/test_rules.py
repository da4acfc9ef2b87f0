"""Free-text routing prefers "no function fits" over a harmful guess, on a real ONNX session.

The catalog has the shape a user reported: an annotated inventory toolset in which
questions about an item used to match the function that removes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmesh.config.config_defaults import DEFAULT_ROUTER_THRESHOLD
from toolmesh.router.embedding.embedder import OnnxEmbedder
from toolmesh.router.routing import Router
from toolmesh.router.safety.rules import (
    CLOSE,
    DESTRUCTIVE_EXTRA,
    PROHIBITED,
    QUESTION,
    TOO_SHORT,
    WEAK,
    Profile,
    choose,
)
from toolmesh.router.safety.verbs import Effect
from toolmesh.router.search.index import Candidate, FunctionIndex
from toolmesh.router.search.text import Document
from toolmesh.router.sessions import SessionStore

SKU = {
    "type": "object",
    "properties": {"sku": {"type": "string", "description": "The item's SKU, e.g. HW-001"}},
}
INVENTORY = [
    Document("shop.add_item", "add_item", "Add a new item to the inventory.", "shop"),
    Document("shop.list_items", "list_items", "List the items in the inventory.", "shop", read_only=True),
    Document(
        "shop.remove_item", "remove_item", "Remove an item from the inventory.", "shop", SKU, destructive=True
    ),
    Document("shop.reprice", "reprice", "Change the price of an item.", "shop", SKU),
    Document("shop.restock", "restock", "Add units of an item to its stock.", "shop", SKU),
    Document(
        "shop.check_supplier",
        "check_supplier",
        "Check whether the supplier has an item and when it can deliver.",
        "shop",
        SKU,
        read_only=True,
    ),
]
CHANGES_DATA = {"shop.add_item", "shop.remove_item", "shop.reprice", "shop.restock"}


@pytest.fixture(scope="module")
def index(int8_embedder: OnnxEmbedder) -> FunctionIndex:
    index = FunctionIndex(int8_embedder)
    index.sync(INVENTORY)
    return index


@pytest.fixture
def router(index: FunctionIndex) -> Router:
    return Router(index, DEFAULT_ROUTER_THRESHOLD)


@pytest.fixture
def unguarded(index: FunctionIndex) -> Router:
    router = Router(index, DEFAULT_ROUTER_THRESHOLD)
    router.safe_matches = False
    return router


@pytest.mark.parametrize(
    "prompt",
    [
        "is sku HW-001 in stock?",  # a question
        "price of sku HW-001",  # a lookup without a verb
        "should I remove HW-001?",  # a question about a removal is not one
        "don't remove HW-001",  # a prohibition
    ],
)
def test_read_style_prompts_no_longer_reach_functions_that_change_data(
    prompt: str, router: Router, unguarded: Router
) -> None:
    assert unguarded.route(prompt).match in CHANGES_DATA, "the guess the rules are there to stop"
    assert router.route(prompt).match not in CHANGES_DATA


@pytest.mark.parametrize(
    "prompt", ["tell me about item sku HW-001", "sku HW-001", "item", "what items do we have?", "remove"]
)
def test_lookups_ids_and_single_words_never_change_data(prompt: str, router: Router) -> None:
    assert router.route(prompt).match not in CHANGES_DATA


def test_a_question_goes_to_the_best_function_that_answers_it(router: Router) -> None:
    # restock is the best candidate; the supplier check, which answers, clears the threshold too.
    result = router.route("is sku HW-001 in stock?")
    assert result.candidates[0].key == "shop.restock"
    assert result.match == "shop.check_supplier"
    assert [(d.key, d.reason) for d in result.declined] == [("shop.restock", QUESTION)]


@pytest.mark.parametrize(
    ("prompt", "function"),
    [
        ("remove HW-001", "shop.remove_item"),
        ("can you remove HW-001?", "shop.remove_item"),  # a polite command, not a question
        ("could you please delete item HW-002", "shop.remove_item"),
        ("can you add 3 hats to the inventory?", "shop.add_item"),
        ("please add a new item HW-009, a tape measure, to the inventory", "shop.add_item"),
        ("reprice HW-001 to 15 euros", "shop.reprice"),
        ("restock HW-002 with 20 units", "shop.restock"),
    ],
)
def test_commands_still_reach_functions_that_change_data(prompt: str, function: str, router: Router) -> None:
    assert router.route(prompt).match == function


def test_the_answer_says_who_was_passed_over_and_why(router: Router, unguarded: Router) -> None:
    result = router.route("don't remove HW-001", k=4)
    assert result.match is None
    assert result.declined[0].key == "shop.remove_item" and result.declined[0].reason == PROHIBITED
    # Only the match changes: the ranking is the unguarded router's.
    plain = unguarded.route("don't remove HW-001", k=4)
    assert [(c.key, round(c.score, 5)) for c in result.candidates] == [
        (c.key, round(c.score, 5)) for c in plain.candidates
    ]
    answer = result.to_dict()
    assert answer["match"] is None and answer["declined"][0] == {
        "name": "shop.remove_item",
        "reason": PROHIBITED,
    }
    assert router.route("restock HW-002 with 20 units").to_dict()["declined"] == []


def test_a_follow_up_asks_what_the_turn_before_asked_unless_it_says_otherwise(
    index: FunctionIndex, tmp_path: Path
) -> None:
    sessions = SessionStore(tmp_path / "s.sqlite3", ttl=60, max_sessions=10, max_turns=10)
    router = Router(index, DEFAULT_ROUTER_THRESHOLD, sessions)
    sessions.record("s1", "remove HW-001", "shop.remove_item", {"sku": "HW-001"}, None)
    assert router.route("the same for HW-002", session_id="s1").match == "shop.remove_item"
    question = router.route("is HW-002 in stock too?", session_id="s1")
    assert question.candidates[0].key == "shop.remove_item", "routed with the turn before"
    assert question.match != "shop.remove_item" and question.declined[0].reason == QUESTION
    sessions.close()


def test_a_function_that_changes_data_is_read_only_when_annotated_so(
    int8_embedder: OnnxEmbedder,
) -> None:
    # The same restock, marked read-only (say, it only reports what restocking would do).
    index = FunctionIndex(int8_embedder)
    index.sync([INVENTORY[1], INVENTORY[5], Document(**{**_fields(INVENTORY[4]), "read_only": True})])
    assert Router(index, DEFAULT_ROUTER_THRESHOLD).route("is sku HW-001 in stock?").match == "shop.restock"


def _fields(doc: Document) -> dict[str, object]:
    return {name: getattr(doc, name) for name in Document.__dataclass_fields__}


# -- the rules on their own, with scores set by hand -----------------------------------------


def _candidates(*scored: tuple[str, float]) -> list[Candidate]:
    return [Candidate(key, score, score, 0.0) for key, score in scored]


REMOVE = Profile(Effect.DESTROY, verbs=frozenset({"remove", "item"}))
WRITE = Profile(Effect.WRITE, verbs=frozenset({"add", "item"}))
LOOKUP = Profile(Effect.READ)
T = 0.3


def test_a_destructive_function_needs_a_higher_score_unless_asked_for_by_its_verb() -> None:
    found = {"remove_item": REMOVE, "get_item": LOOKUP}
    near = T + DESTRUCTIVE_EXTRA / 2
    match, declined = choose(
        "the hammer HW-001 is discontinued", _candidates(("remove_item", near)), found, T
    )
    assert match is None and declined[0].reason.startswith(WEAK)
    match, _ = choose("the hammer HW-001 is discontinued", _candidates(("remove_item", T + 0.11)), found, T)
    assert match == "remove_item"
    match, _ = choose("remove the hammer HW-001", _candidates(("remove_item", near)), found, T)
    assert match == "remove_item"


def test_a_destructive_function_needs_a_lead_over_the_rest() -> None:
    found = {"remove_item": REMOVE, "add_item": WRITE, "get_item": LOOKUP}
    close = _candidates(("remove_item", 0.62), ("get_item", 0.6))
    match, declined = choose("remove the hammer HW-001", close, found, T)
    assert match == "get_item" and declined[0].reason.startswith(CLOSE)
    clear = _candidates(("remove_item", 0.7), ("get_item", 0.6))
    assert choose("remove the hammer HW-001", clear, found, T) == ("remove_item", [])


def test_the_match_is_the_best_candidate_left_over_the_threshold() -> None:
    found = {"remove_item": REMOVE, "add_item": WRITE, "get_item": LOOKUP}
    ranked = _candidates(("remove_item", 0.5), ("add_item", 0.45), ("get_item", 0.29))
    match, declined = choose("item HW-001", ranked, found, T)
    assert match is None, "get_item is under the threshold"
    assert [(d.key, d.reason) for d in declined] == [("remove_item", TOO_SHORT), ("add_item", TOO_SHORT)]
    assert choose("item HW-001", ranked, found, 0.2)[0] == "get_item"


def test_functions_that_change_data_and_lead_with_an_answer_take_questions() -> None:
    found = {"check_and_reserve": Profile(Effect.WRITE, answers=True)}
    assert choose("does the supplier have HW-001?", _candidates(("check_and_reserve", 0.5)), found, T)[0] == (
        "check_and_reserve"
    )


def test_a_namespace_is_annotated_while_one_of_its_functions_is(int8_embedder: OnnxEmbedder) -> None:
    index = FunctionIndex(int8_embedder)
    index.sync(INVENTORY)
    assert index.annotated("shop") and not index.annotated("")
    unmarked = [Document(**{**_fields(d), "read_only": False, "destructive": False}) for d in INVENTORY]
    index.sync(unmarked)  # the same texts: only the annotations changed
    assert not index.annotated("shop")
    index.sync(INVENTORY[:2])
    assert index.annotated("shop")
    index.sync(INVENTORY[:1])
    assert not index.annotated("shop")
