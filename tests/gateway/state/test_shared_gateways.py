"""Two real gateways sharing one real redis-server: one rate limit between them, sessions that
move from one to the other, list_changed heard on both, and Redis dying and coming back."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.subscriptions import ToolsListChanged

from tests.gateway.conftest import StartGateway, StartUp, runtime
from tests.gateway.mcp.test_endpoint import connect
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import KeyConfig, RouterConfig, StateConfig, hash_key

pytestmark = pytest.mark.slow
KEY = "ci-secret"
AUTH = {"Authorization": f"Bearer {KEY}"}


async def test_a_key_limited_to_10_per_second_gets_10_per_second_across_two_gateways(
    up: StartUp, redis_server: RedisServer
) -> None:
    keys = '[[keys]]\nname = "ci"\nkey_env = "CI_KEY"\nrate = 10\nburst = 1\n'
    # Two `toolmesh up` processes; the URL comes from the environment, as from a Secret on Kubernetes.
    env = {"CI_KEY": KEY, "TOOLMESH_STATE_URL": redis_server.url}
    # No access log: hundreds of lines would fill the unread stderr pipe and block the gateway.
    gateways = [up("access_log = false\n" + keys, env=env) for _ in range(2)]
    # Three clients per gateway, each offering up to ~30 calls a second: well over the limit even
    # when a loaded machine makes each call slow.
    seconds, interval, clients = 3.0, 0.03, 3
    served: dict[int, list[int]] = {g.http_port: [] for g in gateways}

    async def hammer(http: httpx.AsyncClient, port: int) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            answer = await http.post(
                f"http://127.0.0.1:{port}/v1/functions/add/invoke", json={"a": 1}, headers=AUTH
            )
            served[port].append(answer.status_code)
            if answer.status_code == 429:
                assert float(answer.headers["retry-after"]) >= 1  # whole seconds, rounded up
            await asyncio.sleep(interval)

    async with httpx.AsyncClient(timeout=10) as http:
        await asyncio.gather(*(hammer(http, g.http_port) for g in gateways for _ in range(clients)))
    statuses = [s for codes in served.values() for s in codes]
    assert set(statuses) <= {200, 429}
    ok = statuses.count(200)
    # 10 a second for 3 s, plus the burst of 1: ~31 in all, where two separate buckets allow ~62.
    assert 20 <= ok <= 36, f"{ok} calls passed in {seconds} s across both gateways"
    assert all(200 in codes for codes in served.values())  # both gateways spent the one bucket


def router(cache: Path, data: Path) -> RouterConfig:
    return RouterConfig(cache_dir=cache, data_dir=data)


async def test_a_session_started_through_one_gateway_continues_through_the_other(
    gateway_factory: StartGateway, redis_server: RedisServer, router_cache: Path, tmp_path: Path
) -> None:
    state = StateConfig(url=redis_server.url)
    # Each has a data directory of its own: only Redis can carry the session across.
    first, second = [
        await gateway_factory(
            runtime("tools", "router_tools"), router=router(router_cache, tmp_path / name), state=state
        )
        for name in ("a", "b")
    ]
    async with httpx.AsyncClient(timeout=30) as http:
        started = await http.post(
            f"{first.url}/v1/execute",
            json={"prompt": "What's the weather in Oslo in fahrenheit?", "session_id": "trip"},
        )
        assert started.json()["arguments"] == {"city": "Oslo", "unit": "fahrenheit"}
        follow = (
            await http.post(
                f"{second.url}/v1/execute",
                json={"prompt": "now do the same for Paris"},
                headers={"X-Session-Id": "trip"},
            )
        ).json()
        assert follow["function"] == "get_weather" and follow["follow_up"] is True
        assert follow["arguments"] == {"city": "Paris", "unit": "fahrenheit"}
        # A session neither gateway has seen is no session.
        alone = await http.post(
            f"{second.url}/v1/execute", json={"prompt": "now do the same for Paris", "session_id": "x"}
        )
        assert alone.status_code == 404
        # Without Redis a session cannot be read: refused, not answered as if it were empty.
        redis_server.stop()
        lost = await http.post(f"{second.url}/v1/route", json={"prompt": "weather", "session_id": "trip"})
        assert lost.status_code == 503 and lost.json()["error"]["code"] == "state_unavailable"
        sessionless = await http.post(f"{second.url}/v1/route", json={"prompt": "weather in Oslo"})
        assert sessionless.status_code == 200


async def test_a_catalog_change_on_one_gateway_reaches_listen_streams_on_the_other(
    gateway_factory: StartGateway, redis_server: RedisServer
) -> None:
    state = StateConfig(url=redis_server.url)
    first, second = [await gateway_factory(runtime("tools", "sample_tools"), state=state) for _ in range(2)]
    assert second.state is not None
    async with connect(f"{second.url}/mcp") as client, client.listen(tools_list_changed=True) as subscription:
        feed = second.state.feed
        with anyio.fail_after(5):
            await feed.subscribed.wait()  # type: ignore[attr-defined]
        catalog = first.mesh.catalog
        catalog.replace([spec for spec in catalog.specs() if spec.name != "echo"])
        with anyio.fail_after(10):
            event = await anext(aiter(subscription))
    assert isinstance(event, ToolsListChanged)


async def test_redis_dying_mid_run_refuses_with_503_keeps_the_gateway_up_and_recovers(
    gateway_factory: StartGateway, redis_server: RedisServer
) -> None:
    gateway = await gateway_factory(
        keys=[KeyConfig(name="ci", key_hash=hash_key(KEY), rate=100, burst=100)],
        state=StateConfig(url=redis_server.url, timeout=0.5),
    )
    url = f"{gateway.url}/v1/functions/add/invoke"
    async with httpx.AsyncClient(timeout=10, headers=AUTH) as http:
        assert (await http.post(url, json={"a": 1})).json()["structured"] == 2
        redis_server.stop()
        refused = await http.post(url, json={"a": 1})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        error = refused.json()["error"]
        assert error["code"] == "state_unavailable" and "Redis" in error["message"]
        batch = await http.post(f"{gateway.url}/v1/tool_calls", json=[{"name": "add", "arguments": {"a": 1}}])
        assert batch.status_code == 200
        (result,) = batch.json()["results"]
        assert result["is_error"] and "shared state (Redis) cannot be reached" in result["content"]
        assert "127.0.0.1" not in refused.text + batch.text  # where Redis is stays in the log
        # What needs no shared state still works: listing is not a call.
        assert (await http.get(f"{gateway.url}/v1/functions")).status_code == 200
        assert (await http.get(f"{gateway.url}/healthz")).status_code == 200
        redis_server.start()
        assert (await http.post(url, json={"a": 2})).json()["structured"] == 3
