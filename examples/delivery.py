"""A small online shop as a class of tools: browse products, order, track, cancel.

`Delivery` is a `toolmesh.Toolset`: the runtime creates one instance per pod and
serves its public methods as ``delivery.list_products``, ``delivery.place_order``
and so on, so the instance can keep the stock and the orders in memory. Each pod
therefore has a shop of its own; a real one would keep them in a database.

The courier is simulated and fast: an order moves from "confirmed" to
"delivered" in fifteen minutes, so a demo can watch it happen. Its status is
computed from the time since it was placed, never stored.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, Field

import toolmesh

Category = Literal["camping", "cooking", "clothing", "lighting"]
Status = Literal["confirmed", "packed", "shipped", "out_for_delivery", "delivered", "cancelled"]


class Product(BaseModel):
    """An item the shop sells. Prices are in euro cents, so sums are exact."""

    id: str
    name: str
    category: Category
    price_cents: int
    in_stock: int


class Order(BaseModel):
    """A placed order."""

    id: str
    product_id: str
    product_name: str
    quantity: int
    total_cents: int
    placed_at: dt.datetime
    estimated_delivery: dt.datetime


class TrackingEvent(BaseModel):
    """A step an order has reached."""

    status: Status
    at: dt.datetime


class Tracking(BaseModel):
    """Where an order is now, and how it got there."""

    order_id: str
    status: Status
    estimated_delivery: dt.datetime | None
    history: list[TrackingEvent]


class UnknownProductError(LookupError):
    """No product has the given id."""


class UnknownOrderError(LookupError):
    """No order has the given id."""


class OutOfStockError(ValueError):
    """Fewer items are in stock than were ordered."""


class OrderLockedError(ValueError):
    """The order has left the warehouse and can no longer be cancelled."""


_CATALOG = (
    Product(id="TENT-2P", name="Ridgeline 2-person tent", category="camping", price_cents=18900, in_stock=4),
    Product(id="BAG-MUMMY", name="Mummy sleeping bag", category="camping", price_cents=8900, in_stock=7),
    Product(id="STOVE-GAS", name="Compact gas stove", category="cooking", price_cents=4500, in_stock=12),
    Product(id="POT-TI", name="Titanium cook pot", category="cooking", price_cents=3900, in_stock=0),
    Product(
        id="JACKET-RAIN", name="Packable rain jacket", category="clothing", price_cents=12900, in_stock=5
    ),
    Product(id="SOCKS-WOOL", name="Merino hiking socks", category="clothing", price_cents=1900, in_stock=40),
    Product(id="LAMP-HEAD", name="Rechargeable headlamp", category="lighting", price_cents=3400, in_stock=9),
    Product(id="LANTERN", name="Solar camp lantern", category="lighting", price_cents=2900, in_stock=3),
)

# When each step is reached after an order is placed (the simulated courier is quick).
_TIMELINE: tuple[tuple[Status, dt.timedelta], ...] = (
    ("confirmed", dt.timedelta()),
    ("packed", dt.timedelta(minutes=2)),
    ("shipped", dt.timedelta(minutes=5)),
    ("out_for_delivery", dt.timedelta(minutes=10)),
    ("delivered", dt.timedelta(minutes=15)),
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


class Delivery(toolmesh.Toolset, namespace="delivery"):
    """Browse the Fernhill Supply Co. outdoor shop, place orders and track deliveries."""

    def __init__(self, clock: Callable[[], dt.datetime] = _now) -> None:
        self._clock = clock
        self._stock = {product.id: product.model_copy() for product in _CATALOG}
        self._orders: dict[str, Order] = {}
        self._cancelled: dict[str, dt.datetime] = {}
        # Sync methods run in worker threads: two orders may race for the last item.
        self._lock = threading.Lock()

    @toolmesh.function(
        read_only=True,
        examples=[
            "what camping gear do you sell?",
            "show me the products in the shop",
            "list the cooking products",
        ],
    )
    def list_products(self, category: Category | None = None) -> list[Product]:
        """List the products for sale, with their prices and stock.

        Parameters
        ----------
        category : str, optional
            Only list products in this category; all products when left out.
        """
        with self._lock:
            return [
                p.model_copy() for p in self._stock.values() if category is None or p.category == category
            ]

    @toolmesh.function(
        destructive=True,
        examples=[
            "order 2 of product TENT-2P",
            "buy one headlamp, product LAMP-HEAD",
            "I would like to purchase 3 of STOVE-GAS",
        ],
    )
    def place_order(self, product_id: str, quantity: Annotated[int, Field(ge=1, le=20)] = 1) -> Order:
        """Order a product; the stock is reserved at once.

        Parameters
        ----------
        product_id : str
            The product's id, as given by list_products (e.g. "TENT-2P").
        quantity : int
            How many to order, from 1 to 20.

        Raises
        ------
        UnknownProductError
            If no product has that id.
        OutOfStockError
            If fewer than `quantity` items are in stock.
        """
        with self._lock:
            product = self._product(product_id)
            if product.in_stock < quantity:
                left = f"only {product.in_stock} left" if product.in_stock else "sold out"
                raise OutOfStockError(f"cannot order {quantity} x {product.name} ({product.id}): {left}")
            product.in_stock -= quantity
            placed = self._clock()
            order = Order(
                id=f"ORD-{len(self._orders) + 1:05d}",
                product_id=product.id,
                product_name=product.name,
                quantity=quantity,
                total_cents=product.price_cents * quantity,
                placed_at=placed,
                estimated_delivery=placed + _TIMELINE[-1][1],
            )
            self._orders[order.id] = order
            return order

    @toolmesh.function(
        read_only=True,
        examples=[
            "where is my order ORD-00001?",
            "track order ORD-00002",
            "has my package been shipped yet, order ORD-00003",
        ],
    )
    def track_order(self, order_id: str) -> Tracking:
        """Tell where an order is: its status, its history and when it should arrive.

        Parameters
        ----------
        order_id : str
            The order id returned by place_order (e.g. "ORD-00001").
        """
        with self._lock:
            order = self._order(order_id)
            cancelled = self._cancelled.get(order.id)
        now = self._clock()
        history = [
            TrackingEvent(status=status, at=order.placed_at + after)
            for status, after in _TIMELINE
            if order.placed_at + after <= (cancelled or now)
        ]
        if cancelled is not None:
            history.append(TrackingEvent(status="cancelled", at=cancelled))
        last = history[-1].status
        arrives = None if last in ("delivered", "cancelled") else order.estimated_delivery
        return Tracking(order_id=order.id, status=last, estimated_delivery=arrives, history=history)

    @toolmesh.function(
        destructive=True,
        idempotent=True,
        examples=[
            "cancel order ORD-00001",
            "I don't want order ORD-00002 any more, cancel it",
            "stop my order ORD-00003 from shipping",
        ],
    )
    def cancel_order(self, order_id: str) -> Tracking:
        """Cancel an order that has not shipped yet and put its items back in stock.

        Parameters
        ----------
        order_id : str
            The order id returned by place_order.

        Raises
        ------
        OrderLockedError
            If the order has already shipped.
        """
        with self._lock:
            order = self._order(order_id)
            if order.id not in self._cancelled:
                now, shipped = self._clock(), order.placed_at + dict(_TIMELINE)["shipped"]
                if now >= shipped:
                    raise OrderLockedError(
                        f"order {order.id} shipped at {shipped:%H:%M} UTC; return it instead"
                    )
                self._cancelled[order.id] = now
                self._stock[order.product_id].in_stock += order.quantity
        return self.track_order(order_id)

    def _product(self, product_id: str) -> Product:
        try:
            return self._stock[product_id.strip().upper()]
        except KeyError:
            known = ", ".join(self._stock)
            raise UnknownProductError(f"no product with id {product_id!r}; known ids: {known}") from None

    def _order(self, order_id: str) -> Order:
        try:
            return self._orders[order_id.strip().upper()]
        except KeyError:
            raise UnknownOrderError(f"no order with id {order_id!r}") from None
