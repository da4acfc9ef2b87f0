"""Free-text calls waiting for their confirmation, in a real redis-server shared by two real
gateways: a call planned on one replica is confirmed on either, and runs once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

import toolmesh
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.core.test_free_text import router_config
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import StateConfig
from toolmesh.gateway.state.confirmations import PendingCall
from toolmesh.gateway.state.redis_client import Outage, connect
from toolmesh.gateway.state.redis_confirmations import RedisConfirmations

pytestmark = pytest.mark.slow


async def test_a_call_planned_on_one_replica_is_confirmed_once_on_another(
    gateway_factory: StartGateway, redis_server: RedisServer, router_cache: Path, tmp_path: Path
) -> None:
    state = StateConfig(url=redis_server.url)
    first, second = [
        await gateway_factory(
            runtime("shop", "inventory_tools"),
            router=router_config(router_cache, tmp_path / name),
            state=state,
        )
        for name in ("a", "b")
    ]
    async with httpx.AsyncClient(timeout=30) as http:
        planned = (
            await http.post(f"{first.url}/v1/execute", json={"prompt": "remove the item with sku HW-001"})
        ).json()
        token = planned["confirmation"]["token"]
        # Both replicas are handed the token at once: exactly one runs the call.
        answers = await asyncio.gather(
            *(http.post(f"{g.url}/v1/execute", json={"confirm": token}) for g in (first, second))
        )
    assert sorted(a.status_code for a in answers) == [200, 409]
    # And the store itself, taken concurrently many times: once.
    client = connect(redis_server.url, 5.0)
    store = RedisConfirmations(client, "t:", Outage(redis_server.url))
    call = PendingCall("p", "f", {}, {}, "prompt")
    token = await store.put(call, ttl=30)
    taken = await asyncio.gather(*(store.take(token, "p") for _ in range(20)), return_exceptions=True)
    assert sum(isinstance(t, PendingCall) for t in taken) == 1
    assert all(isinstance(t, toolmesh.ConfirmationInvalid) for t in taken if not isinstance(t, PendingCall))
    await client.aclose()
