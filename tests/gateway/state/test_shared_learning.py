"""Two real gateways sharing one real redis-server: what the router learns through one routes on
both, feedback may go to either, and `toolmesh router examples remove` reaches both at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.state.conftest import RedisServer
from toolmesh.cli import main
from toolmesh.config import RouterConfig, StateConfig
from toolmesh.gateway.server import Gateway

pytestmark = pytest.mark.slow
#: Close to none of router_tools' functions, so what is learned decides where it goes.
PROMPT = "how many parcels are left in the warehouse?"
TAUGHT = "set_timer"


def learned(gateway: Gateway) -> list[str]:
    assert gateway.router is not None
    return gateway.router.router().index.learned(TAUGHT)


async def until_learned(gateways: list[Gateway], prompts: list[str]) -> None:
    async with asyncio.timeout(10):
        while any(learned(g) != prompts for g in gateways):  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_feedback_through_one_gateway_teaches_both_and_a_removal_reaches_both(
    gateway_factory: StartGateway,
    redis_server: RedisServer,
    router_cache: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    state = StateConfig(url=redis_server.url)
    # Each has a data directory of its own: only Redis can carry what was learned across.
    first, second = [
        await gateway_factory(
            runtime("tools", "router_tools"),
            router=RouterConfig(cache_dir=router_cache, data_dir=tmp_path / name),
            state=state,
        )
        for name in ("a", "b")
    ]
    async with httpx.AsyncClient(timeout=30) as http:
        before = (await http.post(f"{first.url}/v1/route", json={"prompt": PROMPT, "k": 5})).json()
        assert before["candidates"][0]["name"] != TAUGHT
        # The routing happened on the first gateway; its feedback goes to the second.
        feedback = await http.post(
            f"{second.url}/v1/route/feedback",
            json={"routing_id": before["routing_id"], "function": TAUGHT},
        )
        assert feedback.status_code == 200, feedback.text
        assert feedback.json() == {
            "function": TAUGHT,
            "learned": PROMPT,
            "learned_examples": 1,
            "unlearned": {},
        }
        await until_learned([first, second], [PROMPT])
        for gateway in (first, second):
            after = (await http.post(f"{gateway.url}/v1/route", json={"prompt": PROMPT})).json()
            assert after["candidates"][0]["name"] == TAUGHT
        unknown = await http.post(
            f"{second.url}/v1/route/feedback", json={"routing_id": "nope", "function": TAUGHT}
        )
        assert unknown.status_code == 400

    # The CLI finds the shared store through the config and forgets there: both gateways follow.
    config = tmp_path / "toolmesh.toml"
    config.write_text(f'[state]\nurl = "{redis_server.url}"\n')
    listing = ["router", "examples", "list", "--config", str(config), "--json"]
    assert await asyncio.to_thread(main, listing) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(row["function"], row["prompt"]) for row in rows] == [(TAUGHT, PROMPT)]
    removal = ["router", "examples", "remove", TAUGHT, "--config", str(config)]
    assert await asyncio.to_thread(main, removal) == 0
    assert json.loads(capsys.readouterr().out) == {"function": TAUGHT, "removed": 1}
    await until_learned([first, second], [])
