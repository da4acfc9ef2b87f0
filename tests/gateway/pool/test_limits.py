"""A runtime's limits through the gateway, on real pods: a greedy function, an oversized result
and stuck threads each cost only their own call (or their own pod), never anyone else's."""

from __future__ import annotations

import asyncio

import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh import AsyncClient, FunctionTimeout, ResourceExhausted


@pytest.mark.slow
@pytest.mark.parametrize("spawn", ["fork", "exec"])
async def test_a_function_past_max_memory_mb_fails_alone(gateway_factory: StartGateway, spawn: str) -> None:
    gateway = await gateway_factory(
        runtime("greedy", "limit_tools", max_memory_mb=1024, spawn=spawn), runtime("tools", "pool_tools")
    )
    async with AsyncClient(gateway.url) as client:
        await asyncio.gather(client.invoke("ping", {}), client.invoke("wait", {}))  # both pods up
        assert (await client.invoke("address_space_limit", {})).structured == 1024 * 1024 * 1024
        hogging = True
        answers: list[bool] = []

        async def innocent() -> None:
            while hogging:
                answers.append(not (await client.invoke("wait", {"seconds": 0.01})).is_error)

        others = [asyncio.create_task(innocent()) for _ in range(4)]
        with pytest.raises(ResourceExhausted, match=r"hog ran out of memory.*max_memory_mb = 1024"):
            await client.invoke("hog", {})
        hogging = False
        await asyncio.gather(*others)
        assert answers and all(answers), "every concurrent call to another function succeeded"
        assert not (await client.invoke("ping", {})).is_error, "the greedy runtime still serves"


@pytest.mark.parametrize("transport", ["socket", "grpc"])
async def test_an_oversized_result_fails_only_its_own_call(
    gateway_factory: StartGateway, transport: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "limit_tools", max_replicas=1, transport=transport))
    async with AsyncClient(gateway.url) as client:
        pid = (await client.invoke("ping", {})).structured
        innocent = [asyncio.ensure_future(client.invoke("nap", {"seconds": 0.5})) for _ in range(5)]
        await asyncio.sleep(0.1)
        # 70 MiB is past the wire's own 64 MiB limit too: before, it broke the pod's connection.
        with pytest.raises(ResourceExhausted, match=r"max_result_bytes \(16777216\)"):
            await client.invoke("huge", {"mib": 70})
        results = await asyncio.gather(*innocent)
        assert [r.structured for r in results] == [pid] * 5, "the same pod answered all five"


@pytest.mark.slow
async def test_a_pod_with_stuck_threads_is_replaced(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", "limit_tools", workers=2, timeout=0.3, max_replicas=1))
    async with AsyncClient(gateway.url) as client:
        first = (await client.invoke("ping", {})).structured
        with pytest.raises(FunctionTimeout):
            await client.invoke("stuck", {"seconds": 5})
        # The pod stops taking calls (refused, so the gateway sends them on) and exits; the
        # calls after it all succeed, on its replacement.
        pids = [(await client.invoke("ping", {})).structured for _ in range(5)]
        assert pids[-1] != first
        assert not (await client.invoke("stuck", {"seconds": 0.01})).is_error
