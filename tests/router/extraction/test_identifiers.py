"""Identifiers read by their shape: no cue word needed, one token per parameter, and an id's
digits never read as a number; in a follow-up, the id the prompt gives replaces the session's."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from toolmesh.router.extraction.extract import Extraction, extract_arguments
from toolmesh.router.extraction.identifiers import shaped

TODAY = dt.date(2026, 3, 10)
TEXT = {"type": "string"}


def schema(required: tuple[str, ...] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def extract(prompt: str, spec: dict[str, Any], **kwargs: Any) -> Extraction:
    return extract_arguments(prompt, spec, today=TODAY, **kwargs)


# An inventory module's functions, as the runtime publishes their input schemas.
CHECK_SUPPLIER = schema(
    ("sku",), sku=TEXT, delay={"type": "integer", "default": 0, "description": "days of delay to simulate"}
)
REMOVE_ITEM = schema(("sku",), sku=TEXT)
ADD_ITEM = schema(
    ("sku", "name", "category", "quantity", "price"),
    sku={"type": "string", "description": "Stock keeping unit, e.g. HW-001"},
    name=TEXT,
    category=TEXT,
    quantity={"type": "integer"},
    price={"type": "number"},
)


@pytest.mark.parametrize(
    "token",
    ["HW-001", "A4", "ORD-1001", "sku-77", "INV_2024_07", "123e4567-e89b-12d3-a456-426614174000", "12B"],
)
def test_what_looks_like_an_identifier(token: str) -> None:
    assert shaped(token)


@pytest.mark.parametrize(
    "token", ["hammer", "1001", "5kg", "3pm", "2nd", "24-hour", "2024-05-01", "1e5", "1920x1080"]
)
def test_what_does_not(token: str) -> None:
    assert not shaped(token)


def test_an_id_fills_its_parameter_without_a_cue_and_its_digits_are_no_number() -> None:
    found = extract("check supplier for item HW-001", CHECK_SUPPLIER)
    assert found.arguments == {"sku": "HW-001", "delay": 0}
    assert found.sources == {"sku": "identifier", "delay": "default"}
    assert extract("remove A4", REMOVE_ITEM).arguments == {"sku": "A4"}


def test_other_numbers_still_read_around_an_id() -> None:
    found = extract("add HW-002 claw hammer, 5 at 9.99", ADD_ITEM)
    assert found.arguments == {"sku": "HW-002", "quantity": 5, "price": 9.99}
    assert extract("check supplier for HW-001 with a delay of 3 days", CHECK_SUPPLIER).arguments == {
        "sku": "HW-001",
        "delay": 3,
    }


@pytest.mark.parametrize(
    ("prompt", "spec", "expected"),
    [
        (
            "trace 123e4567-e89b-12d3-a456-426614174000",
            schema(request_id=TEXT),
            "123e4567-e89b-12d3-a456-426614174000",
        ),
        ("pay INV_2024_07 today", schema(invoice_number=TEXT), "INV_2024_07"),
        ("open sku-77", schema(sku=TEXT), "sku-77"),
        ("book seat 12B", schema(seat={"type": "string", "description": "Seat code"}), "12B"),
        # No id word in the name: an example of the same shape in the description says it.
        ("restock GR-7", schema(item={"type": "string", "description": "The item, e.g. HW-001"}), "GR-7"),
        # The cue-based reading keeps working, for tokens of any shape.
        ("where is my order ord-1001?", schema(order_id=TEXT), "ord-1001"),
        ("where is order 1001", schema(order_id=TEXT), "1001"),
    ],
)
def test_identifier_parameters(prompt: str, spec: dict[str, Any], expected: str) -> None:
    [value] = extract(prompt, spec).arguments.values()
    assert value == expected


def test_a_parameter_that_holds_no_identifier_takes_none() -> None:
    found = extract("restock GR-7", schema(("item",), item=TEXT))
    assert found.arguments == {} and found.missing == ["item"]


def test_quantities_dates_and_times_are_not_identifiers() -> None:
    spec = schema(("order_id",), order_id=TEXT, count={"type": "integer"})
    found = extract("ship 10% 5kg at 3pm on 2024-05-01", spec)
    assert "order_id" not in found.arguments and found.missing == ["order_id"]


def test_a_pattern_must_accept_the_token() -> None:
    code = schema(("code",), code={"type": "string", "pattern": r"^[A-Z]{3}-\d+$"})
    assert extract("compare CL-1 with ABC-12", code).arguments == {"code": "ABC-12"}
    assert extract("look at CL-1", code).missing == ["code"]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("move 50 from ACC-1 to ACC-2", ("ACC-1", "ACC-2")),
        ("move 50 to ACC-2 from ACC-1", ("ACC-1", "ACC-2")),
        ("move ACC-1 50 ACC-2", ("ACC-1", "ACC-2")),  # no cue: in order
    ],
)
def test_several_identifier_parameters_share_the_tokens_by_cue_then_order(
    prompt: str, expected: tuple[str, str]
) -> None:
    spec = schema(
        ("from_account_id", "to_account_id", "amount"),
        from_account_id=TEXT,
        to_account_id=TEXT,
        amount={"type": "number"},
    )
    found = extract(prompt, spec).arguments
    assert (found["from_account_id"], found["to_account_id"], found["amount"]) == (*expected, 50)


def test_a_cue_word_names_the_parameter_and_no_token_goes_twice() -> None:
    spec = schema(("ticket_id", "customer_id"), ticket_id=TEXT, customer_id=TEXT)
    assert extract("link customer C-9 to ticket T-1", spec).arguments == {
        "ticket_id": "T-1",
        "customer_id": "C-9",
    }
    found = extract("link T-1", spec)
    assert found.arguments == {"ticket_id": "T-1"} and found.missing == ["customer_id"]


@pytest.mark.parametrize("prompt", ["and for GR-001?", "again with GR-001", "same for sku GR-001"])
def test_in_a_follow_up_the_prompts_id_replaces_the_sessions(prompt: str) -> None:
    found = extract(prompt, CHECK_SUPPLIER, previous={"sku": "HW-001", "delay": 2})
    assert found.arguments == {"sku": "GR-001", "delay": 2}
    assert found.sources == {"sku": "identifier", "delay": "previous"}


def test_a_previous_id_says_the_parameter_takes_ids() -> None:
    spec = schema(("item",), item=TEXT)
    found = extract("and CL-1?", spec, previous={"item": "HW-001"})
    assert found.arguments == {"item": "CL-1"} and found.sources == {"item": "identifier"}
    assert extract("and again", spec, previous={"item": "HW-001"}).sources == {"item": "previous"}


def test_all_caps_codes_fill_an_id_parameter_but_short_acronyms_do_not() -> None:
    spec = schema(("product_id",), product_id=TEXT, quantity={"type": "integer", "default": 1})
    assert extract("make that 3 of LANTERN too", spec).arguments == {"product_id": "LANTERN", "quantity": 3}
    assert extract("buy SOCKS-WOOL", spec).arguments["product_id"] == "SOCKS-WOOL"
    assert extract("ship one to the USA", spec).missing == ["product_id"]
    # Only a parameter named as an id: a language code is no product.
    language = schema(("language",), language={"type": "string", "description": "Language code, e.g. en"})
    assert extract("translate HELLO please", language).missing == ["language"]
