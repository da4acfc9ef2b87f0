"""What the client tests share: both HTTP clients driven alike, and exact-error checks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from toolmesh import AsyncClient, Client, ToolmeshError

E = TypeVar("E", bound=ToolmeshError)


class Driven:
    """A Client or AsyncClient whose methods are awaited alike: the sync one's in a thread."""

    def __init__(self, client: Client | AsyncClient) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.client, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            if isinstance(self.client, AsyncClient):
                return await method(*args, **kwargs)
            return await asyncio.to_thread(method, *args, **kwargs)

        return call


Connect = Callable[..., Driven]


@pytest_asyncio.fixture(loop_scope="module", params=["async", "sync"])
async def connect(request: pytest.FixtureRequest) -> AsyncIterator[Connect]:
    """``connect(url, api_key=None, timeout=10)``: a client of the kind under test, closed afterwards."""
    opened: list[Client | AsyncClient] = []

    def open_client(url: str, api_key: str | None = None, timeout: float = 10.0) -> Driven:
        kind = AsyncClient if request.param == "async" else Client
        client = kind(url, api_key=api_key, timeout=timeout)
        opened.append(client)
        return Driven(client)

    yield open_client
    for client in opened:
        if isinstance(client, AsyncClient):
            await client.close()
        else:
            client.close()


async def raises(cls: type[E], call: Awaitable[Any]) -> E:
    """The error `call` raises, which must be exactly `cls` (not a subclass or a parent)."""
    with pytest.raises(ToolmeshError) as caught:
        await call
    assert type(caught.value) is cls, repr(caught.value)
    return caught.value
