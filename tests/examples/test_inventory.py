"""examples.inventory: an in-memory warehouse whose annotations say what each function does to it."""

from __future__ import annotations

import pytest


def test_items_are_added_restocked_repriced_and_removed() -> None:
    from examples.inventory import DuplicateItemError, Inventory, UnknownItemError

    stock = Inventory()
    assert stock.get_item("hw-001").name == "Claw hammer"
    assert "GD-001" not in [i.sku for i in stock.list_items(in_stock_only=True)]
    added = stock.add_item("hat-001", "Wool hat", 1200, quantity=3)
    assert added.sku == "HAT-001" and stock.get_item("HAT-001").quantity == 3
    with pytest.raises(DuplicateItemError):
        stock.add_item("HAT-001", "Another hat", 900)
    assert stock.restock("HAT-001", 20).quantity == 23
    assert stock.reprice("HAT-001", 1500).price_cents == 1500
    assert stock.remove_item("HAT-001").sku == "HAT-001"
    with pytest.raises(UnknownItemError, match="known SKUs"):
        stock.get_item("HAT-001")


def test_the_supplier_answers_the_same_for_a_sku_and_only_for_known_ones() -> None:
    from examples.inventory import Inventory, UnknownItemError

    stock = Inventory()
    offer = stock.check_supplier("HW-002")
    assert offer == stock.check_supplier("hw-002") and 1 <= offer.lead_time_days <= 14
    with pytest.raises(UnknownItemError):
        stock.check_supplier("XX-999")


def test_the_annotations_say_what_changes_data() -> None:
    from examples import inventory
    from toolmesh.runtimes.functions.discovery import discover

    specs = {h.spec.name: h.spec.annotations for h in discover(inventory)[0]}
    assert {n for n, a in specs.items() if a.read_only} == {"list_items", "get_item", "check_supplier"}
    assert {n for n, a in specs.items() if a.destructive} == {"remove_item"}
