"""ctx.state on real pods and a real gateway, kept in SQLite or in a real redis-server: it
outlives pods and gateways, loses no concurrent update, keeps runtimes apart and holds its limits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.pool.test_replicas import eventually, replicas
from tests.gateway.state.conftest import RedisServer
from toolmesh import AsyncClient
from toolmesh.config import FunctionStateConfig, RuntimeConfig, StateConfig
from toolmesh.gateway.pool.runtime_pool import Pool
from toolmesh.gateway.server import Gateway
from toolmesh.protocol.pod_env import MESH_TOKEN_ENV, RUNTIME_ENV, read_environment
from toolmesh.v1 import mesh_pb2, mesh_pb2_grpc

Store = Callable[[], StateConfig]


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest) -> Store:
    """Each test that takes it runs on both stores: the state's [state] section."""
    if request.param == "sqlite":
        return StateConfig
    server: RedisServer = request.getfixturevalue("redis_server")
    return lambda: StateConfig(url=server.url)


@pytest.fixture
async def client() -> AsyncIterator[Callable[[Gateway], AsyncClient]]:
    made: list[AsyncClient] = []

    def make(gateway: Gateway) -> AsyncClient:
        made.append(AsyncClient(gateway.url, timeout=60))
        return made[-1]

    yield make
    for one in made:
        await one.close()


def state_runtime(name: str = "tools", **settings: Any) -> RuntimeConfig:
    return runtime(name, "state_tools", **settings)


def neighbour() -> RuntimeConfig:
    """A second runtime, "beta", whose functions read and write ctx.state like alpha's."""
    return runtime("beta", "state_neighbour_tools")


async def call(client: AsyncClient, function: str, **arguments: Any) -> Any:
    result = await client.invoke(function, arguments)
    assert not result.is_error, result.error
    return result.text if result.structured is None else result.structured


async def test_state_outlives_scale_to_zero_and_a_gateway_restart(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store, tmp_path: Path
) -> None:
    file = FunctionStateConfig(path=tmp_path / "kept.sqlite3")
    gateway = await gateway_factory(state_runtime(idle_timeout=0.2), state=store(), function_state=file)
    await call(client(gateway), "put", key="cart", value_json=json.dumps({"apples": 3}))
    assert await call(client(gateway), "incr", key="visits") == 1
    await eventually(lambda: replicas(gateway).replicas == [], timeout=15)

    # A new pod (the module's globals would be gone with the old one) reads what the old one wrote.
    assert await call(client(gateway), "get", key="cart") == {"value": {"apples": 3}}
    await gateway.stop(grace=0)

    again = await gateway_factory(state_runtime(), state=store(), function_state=file)
    assert await call(client(again), "get", key="cart") == {"value": {"apples": 3}}
    assert await call(client(again), "incr", key="visits") == 2


async def test_a_thousand_concurrent_incrs_from_four_pods_lose_none(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store
) -> None:
    gateway = await gateway_factory(
        state_runtime(min_replicas=4, max_replicas=4, target_concurrency=1), state=store()
    )
    assert len(replicas(gateway).replicas) == 4
    # 40 calls spread over the 4 pods, each making 25 increments at once: 1,000 in flight together.
    http = client(gateway)
    pids = await asyncio.gather(*(call(http, "incr_many", key="hits", times=25) for _ in range(40)))
    assert len(set(pids)) == 4
    assert await call(client(gateway), "get", key="hits") == {"value": 1000}


async def test_update_under_contention_loses_no_write(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store
) -> None:
    gateway = await gateway_factory(
        state_runtime(min_replicas=4, max_replicas=4, target_concurrency=1), state=store()
    )
    items = [f"item-{n}" for n in range(120)]
    pids = await asyncio.gather(*(call(client(gateway), "append", key="log", item=i) for i in items))
    assert len(set(pids)) > 1
    kept = (await call(client(gateway), "get", key="log"))["value"]
    assert sorted(kept) == sorted(items)


async def test_a_runtime_never_sees_another_runtimes_keys(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store
) -> None:
    gateway = await gateway_factory(state_runtime("alpha"), neighbour(), state=store())
    http = client(gateway)
    await call(http, "put", key="secret", value_json='"alpha only"')
    await call(http, "incr", key="count")
    assert await call(http, "peek", key="secret") == {"value": "missing"}
    assert await call(http, "peek_keys") == []
    assert await call(http, "bump", key="count") == 1
    assert await call(http, "list_keys", prefix="") == ["count", "secret"]
    assert await call(http, "drop", key="secret") is False
    assert await call(http, "get", key="secret") == {"value": "alpha only"}


async def test_only_a_pods_own_token_reaches_state_and_it_decides_the_runtime(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient]
) -> None:
    gateway = await gateway_factory(state_runtime("alpha"), neighbour())
    await call(client(gateway), "put", key="secret", value_json='"alpha only"')
    assert isinstance(gateway.pool, Pool) and gateway.pods_server is not None
    access = gateway.pool._mesh
    assert access is not None
    get = mesh_pb2.StateRequest(op=mesh_pb2.StateRequest.GET, key="secret")

    async def ask(address: str, token: str) -> mesh_pb2.StateResponse:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = mesh_pb2_grpc.MeshStub(channel)
            reply: mesh_pb2.StateResponse = await stub.State(
                get, metadata=(("authorization", f"Bearer {token}"),), timeout=10
            )
            return reply

    pods = access.address
    assert (await ask(pods, access.token_for("alpha"))).value_json == b'"alpha only"'
    assert (await ask(pods, access.token_for("beta"))).found is False
    # A pod that holds the mesh's token and its runtime's name (Kubernetes: TOOLMESH_RUNTIME)
    # makes the same token as the one the gateway gives the pods it starts.
    on_a_cluster = read_environment({MESH_TOKEN_ENV: access.token, RUNTIME_ENV: "alpha"})
    assert (await ask(pods, on_a_cluster.mesh_token)).value_json == b'"alpha only"'
    # The mesh's own token names no runtime, a forged runtime token proves none, and a caller of
    # the public port (open: no API keys) is no pod.
    public = f"127.0.0.1:{gateway.grpc_port}"
    for address, token in ((pods, access.token), (pods, "alpha." + "0" * 64), (public, "anyone")):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await ask(address, token)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "only the pods this gateway runs may use ctx.state" in str(refused.value.details())


async def test_limits_and_values_that_are_not_json_get_clear_errors(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store
) -> None:
    limits = FunctionStateConfig(max_value_bytes=64, max_key_chars=8, max_keys=3)
    gateway = await gateway_factory(state_runtime(), state=store(), function_state=limits)
    http = client(gateway)
    big = json.dumps("x" * 100)
    assert await call(http, "try_put", key="k", value_json=big) == (
        "InvalidRequest: a ctx.state value may take 64 bytes of JSON ([function_state] max_value_bytes);"
        " this one takes 102"
    )
    too_long = await call(http, "try_put", key="k" * 9, value_json="1")
    assert too_long.startswith("InvalidRequest: a ctx.state key may have 8 characters")
    assert await call(http, "store_odd", kind="not_json") == (
        "InvalidRequest: ctx.state keeps JSON values only; this value is not:"
        " Object of type set is not JSON serializable"
    )
    assert await call(http, "store_odd", kind="incr_text") == (
        "InvalidRequest: ctx.state key 'text' holds something other than a number"
    )
    for key in ("b", "c"):
        assert await call(http, "try_put", key=key, value_json="1") == "stored"
    full = await call(http, "try_put", key="d", value_json="1")
    assert full == (
        "ResourceExhausted: runtime 'tools' holds 3 ctx.state keys, its most ([function_state] max_keys):"
        " delete some, or give them a ttl"
    )
    # An existing key may still change, and a deleted one makes room.
    assert await call(http, "try_put", key="b", value_json="2") == "stored"
    assert await call(http, "remove", key="c") is True
    assert await call(http, "try_put", key="d", value_json="1") == "stored"
    # A function that lets the error through fails with its message.
    failed = await http.invoke("put", {"key": "e", "value_json": "1"})
    assert failed.is_error and failed.error is not None
    assert "[function_state] max_keys" in failed.error.message


async def test_a_ttl_expires_the_key_for_get_and_keys_and_frees_its_place(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store
) -> None:
    gateway = await gateway_factory(
        state_runtime(), state=store(), function_state=FunctionStateConfig(max_keys=2)
    )
    http = client(gateway)
    await call(http, "put", key="session:1", value_json='"soon gone"', ttl=0.5)
    await call(http, "put", key="session:2", value_json='"kept"')
    assert await call(http, "get", key="session:1") == {"value": "soon gone"}
    assert await call(http, "list_keys", prefix="session:") == ["session:1", "session:2"]
    # incr keeps the ttl the key had.
    await call(http, "put", key="session:1", value_json="1", ttl=0.5)
    assert await call(http, "incr", key="session:1") == 2
    await asyncio.sleep(0.8)
    assert await call(http, "get", key="session:1") == {"value": "missing"}
    assert await call(http, "list_keys", prefix="session:") == ["session:2"]
    assert await call(http, "remove", key="session:1") is False
    # The expired key no longer counts against max_keys.
    await call(http, "put", key="other", value_json="1")


async def test_sync_functions_use_the_sync_twins_and_numbers_stay_numbers(
    gateway_factory: StartGateway, client: Callable[[Gateway], AsyncClient], store: Store
) -> None:
    gateway = await gateway_factory(state_runtime(), state=store())
    http = client(gateway)
    assert await call(http, "incr_in_thread", key="n") == 1
    assert await call(http, "incr_in_thread", key="n") == 2
    assert await call(http, "get", key="n:touched") == {"value": True}
    assert await call(http, "get", key="n:calls") == {"value": 2}
    assert await call(http, "incr", key="n", by=0.5) == 2.5
    assert await call(http, "incr", key="f", by=0.1) == 0.1
    assert await call(http, "incr", key="f", by=0.2) == pytest.approx(0.3)
    assert await call(http, "incr", key="neg", by=-3) == -3
