"""Template processes the gateway starts, and the pods they fork or exec."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh import AsyncClient


@pytest.mark.slow
@pytest.mark.parametrize("spawn", ["fork", "exec"])
async def test_pods_the_gateway_starts_load_nothing_of_the_gateway(
    gateway_factory: StartGateway, spawn: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "import_tools", spawn=spawn))
    async with AsyncClient(gateway.url) as client:
        result = await client.invoke("gateway_modules", {})
    assert result.structured == []
