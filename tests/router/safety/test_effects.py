"""What a function does to data: from its annotations, or from its words when it has none."""

from __future__ import annotations

import pytest

from toolmesh.router.safety.effects import answers_question, effect, own_verbs
from toolmesh.router.safety.verbs import Effect
from toolmesh.router.search.text import Document


@pytest.mark.parametrize(
    ("name", "description", "expected"),
    [
        ("delete_file", "Deletes a file from the disk.", Effect.DESTROY),
        ("add", "Calculates the sum of two integers and returns the result.", Effect.READ),
        ("add", "Add two numbers.", Effect.READ),  # arithmetic: adds nothing to anything
        ("acl_api.add_mapping", "Adds an ACL mapping to the user's permissions.", Effect.WRITE),
        ("Hotels_2_BookHouse", "Reserve the selected house for given dates.", Effect.WRITE),
        ("Hotels_2_SearchHouse", "", Effect.READ),  # no description: the name's verb
        ("order_status_check", "Check the current status of an order.", Effect.READ),
        ("set_alarm", "This function sets an alarm for a specific time.", Effect.WRITE),
        ("frobnicate", "Frobnicates the widget.", Effect.READ),  # unknown verbs change nothing
    ],
)
def test_unannotated_functions_are_read_from_their_verbs(
    name: str, description: str, expected: Effect
) -> None:
    assert effect(Document(name, name, description), annotated=False) is expected


def test_annotations_win_and_silence_in_an_annotated_namespace_means_change() -> None:
    check = Document("s.check", "check_stock", "Check the stock of an item.", "s")
    assert effect(check, annotated=True) is Effect.WRITE, "not marked read-only by an author who marks"
    assert effect(check, annotated=False) is Effect.READ
    read_only = Document("s.remove", "remove_hint", "Remove ...", "s", read_only=True)
    assert effect(read_only, annotated=True) is Effect.READ
    assert effect(Document("s.r", "report", "Show a report.", "s", destructive=True), True) is Effect.DESTROY


def test_what_a_function_answers_and_the_verbs_it_is_asked_by() -> None:
    supplier = Document("s.c", "check_supplier", "Check whether the supplier has an item.", "s")
    remove = Document("s.r", "remove_item", "Remove an item and return it.", "s")
    assert answers_question(supplier) and not answers_question(remove)
    order = Document("d.p", "place_order", "Order a product.", "d", examples=("buy one headlamp LAMP-HEAD",))
    assert {"place", "order", "buy"} <= own_verbs(order)


def test_an_http_get_reads() -> None:
    get = Document("requests.get", "requests.get", "Sends a GET request to the specified URL.")
    post = Document("requests.post", "requests.post", "Sends a POST request to the specified URL.")
    assert effect(get, annotated=False) is Effect.READ and effect(post, annotated=False) is Effect.WRITE
