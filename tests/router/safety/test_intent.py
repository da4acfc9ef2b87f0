"""What a prompt asks for: an answer, a change, a prohibition, or too little to say."""

from __future__ import annotations

import pytest

from toolmesh.router.safety.intent import read_intent


@pytest.mark.parametrize(
    "prompt",
    [
        "is sku HW-001 in stock?",
        "what does HW-003 cost",
        "how do I cancel an order",
        "should I remove HW-001?",  # asks for advice, not for the removal
        "can I remove an item that still has stock?",
        "price of sku HW-001",
        "stock level for GD-002",
        "tell me about item sku HW-001",
        "show me the inventory",
        "could you check the supplier for GD-001",
        "Is it safe to remove HW-001, or should I keep it?",
    ],
)
def test_questions_and_lookups_ask_for_no_change(prompt: str) -> None:
    intent = read_intent(prompt)
    assert intent.question and not intent.commands and not intent.prohibition


@pytest.mark.parametrize(
    ("prompt", "verb"),
    [
        ("can you remove HW-001?", "remove"),  # a polite command, question mark or not
        ("could you please delete the item with sku HW-002", "delete"),
        ("please add 3 hats to the inventory", "add"),
        ("I would like to purchase 3 of STOVE-GAS", "purchase"),
        ("I changed my mind, cancel my order ORD-00009", "cancel"),  # the second clause
        ("Reprices HW-001 to 15 euros", "reprice"),
    ],
)
def test_commands_are_commands(prompt: str, verb: str) -> None:
    intent = read_intent(prompt)
    assert intent.commands == {verb} and not intent.question and not intent.low_content


@pytest.mark.parametrize(
    "prompt", ["don't remove HW-001", "do not delete any items", "never reprice it", "Don\u2019t cancel"]
)
def test_prohibitions(prompt: str) -> None:
    assert read_intent(prompt).prohibition


def test_a_clause_led_by_an_unlisted_verb_can_name_a_function() -> None:
    intent = read_intent("ship HW-001 to Oslo")
    assert not intent.commands and intent.commands_function(frozenset({"ship", "item"}))
    assert not intent.commands_function(frozenset({"track", "item"}))


@pytest.mark.parametrize(
    ("prompt", "low"),
    [
        ("item", True),
        ("sku HW-001", True),  # an id names no task
        ("remove", True),
        ("remove HW-001", False),  # ... but it is what a command acts on
        ("add 6 and 9", False),  # numbers are content, not ids
        ("tell me about item sku HW-001", False),
    ],
)
def test_low_content(prompt: str, low: bool) -> None:
    assert read_intent(prompt).low_content is low


@pytest.mark.parametrize(
    ("prompt", "decided"),
    [("the same for ORD-00004", False), ("and ORD-00002?", False), ("price of HW-002 too", True)],
)
def test_a_fragment_leaves_it_to_the_turn_before(prompt: str, decided: bool) -> None:
    assert read_intent(prompt).decided is decided
