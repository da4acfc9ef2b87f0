"""A request's headers indexed once, for the hot routes that look a dozen of them up.

Starlette's `Headers` walks the whole header list on every lookup (``host``, ``origin``,
``content-type`` for the guard; ``authorization``, ``content-length``, ``prefer``, ``accept``,
the ids and the idempotency key for an invoke). `IndexedHeaders` is the same mapping (it is a
`Headers`, iterates and compares as one) with its lookups answered from a dict built on the
first one.
"""

from __future__ import annotations

from typing import Any, overload

from starlette.datastructures import Headers
from starlette.types import Scope


class IndexedHeaders(Headers):
    """`Headers` of `scope` whose `get`, ``[]`` and ``in`` are dict lookups; the first of a
    repeated header wins, as in `Headers`."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope=scope)
        # Reversed so that the first of a repeated name is the one kept.
        self._index: dict[bytes, bytes] = dict(reversed(self._list))

    def __getitem__(self, key: str) -> str:
        return self._index[key.lower().encode("latin-1")].decode("latin-1")

    def __contains__(self, key: Any) -> bool:
        return isinstance(key, str) and key.lower().encode("latin-1") in self._index

    @overload
    def get(self, key: str) -> str | None: ...

    @overload
    def get(self, key: str, default: Any) -> Any: ...

    def get(self, key: str, default: Any = None) -> Any:
        value = self._index.get(key.lower().encode("latin-1"))
        return default if value is None else value.decode("latin-1")
