"""`toolmesh triggers ...` against a real gateway, through `/v1/admin/triggers` with an @admin key."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.gateway.conftest import StartGateway
from toolmesh.cli import main
from toolmesh.config import KeyConfig, hash_key
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.gateway.server import Gateway

KEYS = [
    KeyConfig(name="ops", key_hash=hash_key("ops-key"), scopes=("@admin",)),
    KeyConfig(name="caller", key_hash=hash_key("caller-key"), scopes=("*",)),
]
TRIGGERS = [
    TriggerConfig(name="hourly", function="echo", every="1h", arguments={"text": "now"}, owner="ops"),
    TriggerConfig(name="hook", function="echo", webhook="hook", secret_env="S", owner="ops"),
]


async def cli(gateway: Gateway, *args: str, key: str = "ops-key") -> int:
    # The command blocks on its HTTP call: it runs in a thread while the gateway serves on this loop.
    return await asyncio.to_thread(main, ["triggers", *args, "--url", gateway.url, "--api-key", key])


async def test_list_pause_resume_and_run(
    gateway_factory: StartGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = await gateway_factory(triggers=TRIGGERS, keys=KEYS, environ={"S": "secret"})
    assert await cli(gateway, "list") == 0
    listed = capsys.readouterr().out
    assert "hourly" in listed and "active" in listed and "every 1h" in listed and "next " in listed
    assert "webhook /v1/hooks/hook" in listed

    assert await cli(gateway, "pause", "hourly") == 0
    assert capsys.readouterr().out.strip() == "hourly paused"
    assert await cli(gateway, "list") == 0
    assert "paused" in capsys.readouterr().out
    assert await cli(gateway, "resume", "hourly") == 0
    assert capsys.readouterr().out.strip() == "hourly active"

    assert await cli(gateway, "run", "hourly") == 0
    job_id = capsys.readouterr().out.split()[0]
    async with httpx.AsyncClient(base_url=gateway.url, headers={"authorization": "Bearer ops-key"}) as http:
        job = (await http.get(f"/v1/jobs/{job_id}")).json()
    assert job["trigger"] == "hourly" and job["request_id"].startswith("run:")


async def test_refusals_say_why(gateway_factory: StartGateway, capsys: pytest.CaptureFixture[str]) -> None:
    gateway = await gateway_factory(triggers=TRIGGERS, keys=KEYS, environ={"S": "secret"})
    assert await cli(gateway, "list", key="caller-key") == 2
    assert "@admin" in capsys.readouterr().err
    assert await cli(gateway, "run", "hook") == 2
    assert "only a schedule" in capsys.readouterr().err
    assert await cli(gateway, "pause", "nope") == 2
    assert "no trigger 'nope'" in capsys.readouterr().err


async def test_with_keys_a_trigger_names_the_key_that_sees_its_jobs(gateway_factory: StartGateway) -> None:
    from toolmesh.config import ConfigError

    nobody = TriggerConfig(name="orphan", function="echo", every="1h")
    with pytest.raises(ConfigError, match="owner 'anonymous' is no key's name"):
        await gateway_factory(triggers=[nobody], keys=KEYS)
