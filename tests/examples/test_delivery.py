"""examples.delivery: a stateful toolset; orders reserve stock, can be tracked and cancelled."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve


@pytest.fixture
async def shop(serve: Serve) -> Client:
    return await serve("examples.delivery")


async def stock(shop: Client, product_id: str) -> int:
    products = await shop.ok("delivery.list_products")
    return next(p["in_stock"] for p in products if p["id"] == product_id)


async def test_products_can_be_filtered_by_category(shop: Client) -> None:
    everything = await shop.ok("delivery.list_products")
    cooking = await shop.ok("delivery.list_products", category="cooking")
    assert {p["category"] for p in everything} == {"camping", "cooking", "clothing", "lighting"}
    assert cooking == [p for p in everything if p["category"] == "cooking"]
    assert cooking


async def test_an_order_reserves_stock_and_can_be_tracked(shop: Client) -> None:
    before = await stock(shop, "TENT-2P")
    order = await shop.ok("delivery.place_order", product_id="tent-2p", quantity=2)

    assert order["product_id"] == "TENT-2P" and order["quantity"] == 2
    assert order["total_cents"] == 2 * 18900
    assert await stock(shop, "TENT-2P") == before - 2

    tracking = await shop.ok("delivery.track_order", order_id=order["id"])
    assert tracking["order_id"] == order["id"]
    assert tracking["status"] == "confirmed"
    assert [event["status"] for event in tracking["history"]] == ["confirmed"]
    placed = dt.datetime.fromisoformat(order["placed_at"])
    assert dt.datetime.fromisoformat(tracking["estimated_delivery"]) == placed + dt.timedelta(minutes=15)


async def test_orders_get_distinct_ids(shop: Client) -> None:
    first = await shop.ok("delivery.place_order", product_id="SOCKS-WOOL")
    second = await shop.ok("delivery.place_order", product_id="SOCKS-WOOL")
    assert first["id"] != second["id"]


async def test_sold_out_product_is_an_error_that_says_so(shop: Client) -> None:
    result = await shop.call("delivery.place_order", product_id="POT-TI")
    assert result.is_error and result.error is not None
    assert result.error.code == "function_error"
    assert "OutOfStockError" in result.error.message
    assert "POT-TI" in result.error.message and "sold out" in result.error.message


async def test_ordering_more_than_the_stock_fails_and_changes_nothing(shop: Client) -> None:
    result = await shop.call("delivery.place_order", product_id="LANTERN", quantity=4)
    assert result.is_error and result.error is not None
    assert "only 3 left" in result.error.message
    assert await stock(shop, "LANTERN") == 3


async def test_concurrent_orders_never_oversell(shop: Client) -> None:
    results = await asyncio.gather(
        *(shop.call("delivery.place_order", product_id="LANTERN") for _ in range(10))
    )
    assert sum(not r.is_error for r in results) == 3
    assert all("OutOfStockError" in r.text for r in results if r.is_error)
    assert await stock(shop, "LANTERN") == 0


async def test_unknown_ids_are_named_in_the_error(shop: Client) -> None:
    product = await shop.call("delivery.place_order", product_id="KAYAK")
    assert product.is_error and product.error is not None
    assert "'KAYAK'" in product.error.message and "TENT-2P" in product.error.message
    order = await shop.call("delivery.track_order", order_id="ORD-99999")
    assert order.is_error and order.error is not None
    assert "no order with id 'ORD-99999'" in order.error.message


async def test_cancelling_puts_the_items_back(shop: Client) -> None:
    order = await shop.ok("delivery.place_order", product_id="LAMP-HEAD", quantity=3)
    assert await stock(shop, "LAMP-HEAD") == 6

    cancelled = await shop.ok("delivery.cancel_order", order_id=order["id"])
    again = await shop.ok("delivery.cancel_order", order_id=order["id"])

    assert cancelled["status"] == "cancelled" and cancelled["estimated_delivery"] is None
    assert again == cancelled, "cancelling twice is the same as cancelling once"
    assert await stock(shop, "LAMP-HEAD") == 9


@pytest.mark.parametrize(
    ("arguments", "path"),
    [({"product_id": "TENT-2P", "quantity": 0}, "quantity"), ({"quantity": 1}, "product_id")],
)
async def test_bad_order_arguments_are_named(shop: Client, arguments: dict[str, object], path: str) -> None:
    result = await shop.call("delivery.place_order", **arguments)
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert [v.path for v in result.error.violations] == [path]


def test_an_order_progresses_with_time() -> None:
    """The status is derived from the time since the order: checked with a hand-driven clock."""
    from examples.delivery import Delivery, OrderLockedError

    now = dt.datetime(2030, 5, 1, 9, 0, tzinfo=dt.UTC)
    shop = Delivery(clock=lambda: now)
    order = shop.place_order("STOVE-GAS")
    seen = []
    for minutes in (1, 3, 6, 12, 16, 600):
        now = order.placed_at + dt.timedelta(minutes=minutes)
        seen.append(shop.track_order(order.id).status)
    assert seen == ["confirmed", "packed", "shipped", "out_for_delivery", "delivered", "delivered"]

    final = shop.track_order(order.id)
    assert [event.status for event in final.history] == [
        "confirmed",
        "packed",
        "shipped",
        "out_for_delivery",
        "delivered",
    ]
    assert final.estimated_delivery is None
    with pytest.raises(OrderLockedError, match="shipped at 09:05 UTC"):
        shop.cancel_order(order.id)
