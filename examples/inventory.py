"""A small warehouse's inventory as a class of tools: look items up, add, restock, reprice, remove.

`Inventory` is a `toolmesh.Toolset` in the "inventory" namespace, holding its items in
memory (one warehouse per pod; a real one would keep them in a database). Its functions
say what they do to the data: `list_items`, `get_item` and `check_supplier` are
``read_only``, `remove_item` is ``destructive``, and the others change data that can be
changed back. The router reads these annotations: free text such as "is HW-001 in
stock?" is never routed to a function that changes data (router/safety/rules.py).

The supplier is simulated: each SKU's lead time and stock at the supplier follow from
the SKU itself, so the same question always gets the same answer.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Annotated

from pydantic import BaseModel, Field

import toolmesh

Sku = Annotated[str, Field(pattern=r"^[A-Za-z]{2,5}-\d{3}$")]
Quantity = Annotated[int, Field(ge=1, le=10_000)]
Cents = Annotated[int, Field(ge=0, le=100_000_000)]


class Item(BaseModel):
    """An item the warehouse stocks. Prices are in euro cents, so sums are exact."""

    sku: str
    name: str
    price_cents: int
    quantity: int


class SupplierOffer(BaseModel):
    """What the supplier can deliver of one item."""

    sku: str
    available: int
    lead_time_days: int


class UnknownItemError(LookupError):
    """No item has the given SKU."""


class DuplicateItemError(ValueError):
    """An item with the given SKU is already stocked."""


_STARTING_STOCK = (
    Item(sku="HW-001", name="Claw hammer", price_cents=1450, quantity=12),
    Item(sku="HW-002", name="Cordless drill", price_cents=8900, quantity=3),
    Item(sku="HW-003", name="Box of wood screws (200)", price_cents=690, quantity=40),
    Item(sku="GD-001", name="Garden hose, 25 m", price_cents=3200, quantity=0),
    Item(sku="GD-002", name="Pruning shears", price_cents=1990, quantity=7),
)


class Inventory(toolmesh.Toolset, namespace="inventory"):
    """Keep track of the warehouse's items: what is in stock, at what price, and from whom."""

    def __init__(self) -> None:
        self._items = {item.sku: item.model_copy() for item in _STARTING_STOCK}
        # Sync methods run in worker threads: two restocks of one item must both count.
        self._lock = threading.Lock()

    @toolmesh.function(read_only=True)
    def list_items(self, in_stock_only: bool = False) -> list[Item]:
        """List the items in the inventory with their prices and quantities in stock.

        :param in_stock_only: Leave out the items with none in stock.
        """
        with self._lock:
            return [i.model_copy() for i in self._items.values() if i.quantity or not in_stock_only]

    @toolmesh.function(read_only=True)
    def get_item(self, sku: Sku) -> Item:
        """Look up one item by its SKU: its name, price and quantity in stock.

        :param sku: The item's SKU.
        """
        with self._lock:
            return self._item(sku).model_copy()

    @toolmesh.function
    def add_item(self, sku: Sku, name: str, price_cents: Cents, quantity: int = 0) -> Item:
        """Add a new item to the inventory.

        :param sku: A SKU no item has yet.
        :param name: What the item is called.
        :param price_cents: Its price in euro cents.
        :param quantity: How many are in stock to begin with.
        """
        key = sku.upper()
        with self._lock:
            if key in self._items:
                raise DuplicateItemError(f"{key} is already stocked as {self._items[key].name!r}")
            item = Item(sku=key, name=name, price_cents=price_cents, quantity=max(quantity, 0))
            self._items[key] = item
            return item.model_copy()

    @toolmesh.function(destructive=True, idempotent=True)
    def remove_item(self, sku: Sku) -> Item:
        """Remove an item from the inventory for good, with its stock and price.

        :param sku: The item's SKU.
        """
        with self._lock:
            item = self._item(sku)
            del self._items[item.sku]
            return item

    @toolmesh.function(idempotent=True)
    def reprice(self, sku: Sku, price_cents: Cents) -> Item:
        """Set a new price for an item.

        :param sku: The item's SKU.
        :param price_cents: The new price in euro cents.
        """
        with self._lock:
            item = self._item(sku)
            item.price_cents = price_cents
            return item.model_copy()

    @toolmesh.function
    def restock(self, sku: Sku, quantity: Quantity) -> Item:
        """Record a delivery: add units to an item's quantity in stock.

        :param sku: The item's SKU.
        :param quantity: How many units arrived.
        """
        with self._lock:
            item = self._item(sku)
            item.quantity += quantity
            return item.model_copy()

    @toolmesh.function(read_only=True)
    def check_supplier(self, sku: Sku) -> SupplierOffer:
        """Check how many units of an item the supplier has and how long a delivery takes.

        :param sku: The item's SKU.
        """
        key = sku.upper()
        with self._lock:
            self._item(key)
        seed = hashlib.sha256(key.encode()).digest()
        return SupplierOffer(sku=key, available=seed[0] % 200, lead_time_days=1 + seed[1] % 14)

    def _item(self, sku: str) -> Item:
        try:
            return self._items[sku.strip().upper()]
        except KeyError:
            known = ", ".join(self._items)
            raise UnknownItemError(f"no item with SKU {sku!r}; known SKUs: {known}") from None
