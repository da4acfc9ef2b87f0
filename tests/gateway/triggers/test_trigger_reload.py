"""Hot reload of `[[triggers]]`: a trigger added starts, one removed stops, one changed runs as
it now is, the others run on untouched; a table that cannot run changes nothing. In-process
(`TriggerHost.reload`), and as a user runs it (`toolmesh up`, edit toolmesh.toml, SIGHUP)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import StartGateway
from tests.gateway.reload.conftest import Served, serve_module
from tests.gateway.triggers.test_redis_streams import trigger_jobs
from toolmesh.config.jobs_config import TriggerConfig

HOURLY = TriggerConfig(name="hourly", function="echo", every="1h", arguments={"text": "h"})
KEPT = TriggerConfig(name="kept", function="echo", every="1h", arguments={"text": "k"})

SECOND = """
[[triggers]]
name = "kept"
function = "echo"
every = "1h"
arguments = { text = "k" }

[[triggers]]
name = "beat"
function = "echo"
every = "1s"
arguments = { text = "beat" }
"""


async def test_a_reloaded_table_starts_stops_and_keeps_triggers(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await gateway_factory(triggers=[HOURLY, KEPT])
    host = gateway.triggers
    assert host is not None
    file = tmp_path / "toolmesh.toml"
    for _round in range(2):  # there and back, twice
        file.write_text(SECOND)
        assert await host.reload(str(file), {}) == ["beat", "hourly"]
        assert sorted(host.service.triggers) == ["beat", "kept"]
        await asyncio.sleep(2.2)
        beats = [j for j in await trigger_jobs(gateway, 1000, timeout=0) if j["trigger"] == "beat"]
        assert beats, "the added schedule fires"
        file.write_text(SECOND.replace('name = "beat"', 'name = "hourly"').replace('"1s"', '"1h"'))
        assert await host.reload(str(file), {}) == ["beat", "hourly"]
        assert sorted(host.service.triggers) == ["hourly", "kept"]
        count = len([j for j in await trigger_jobs(gateway, 1000, timeout=0) if j["trigger"] == "beat"])
        await asyncio.sleep(1.5)
        again = len([j for j in await trigger_jobs(gateway, 1000, timeout=0) if j["trigger"] == "beat"])
        assert again == count, "the removed schedule stopped"
    # Nothing changed: nothing restarts.
    assert await host.reload(str(file), {}) == []


async def test_a_table_that_cannot_run_changes_nothing(gateway_factory: StartGateway, tmp_path: Path) -> None:
    gateway = await gateway_factory(triggers=[HOURLY])
    host = gateway.triggers
    assert host is not None
    file = tmp_path / "toolmesh.toml"
    for broken in (
        '[[triggers]]\nname = "x"\nfunction = "no_such_function"\nevery = "1s"\n',
        '[[triggers]]\nname = "x"\nfunction = "echo"\nevery = "soon"\n',
        "[[triggers]\nnot toml",
        '[[triggers]]\nname = "x"\nfunction = "echo"\nwebhook = "x"\nsecret_env = "UNSET_SECRET"\n',
        '[[triggers]]\nname = "x"\nfunction = "echo"\nredis_stream = "s"\n',  # no Redis to read it
    ):
        file.write_text(broken)
        assert await host.reload(str(file), {}) == []
        assert list(host.service.triggers) == ["hourly"]
    file.unlink()
    assert await host.reload(str(file), {}) == []
    assert list(host.service.triggers) == ["hourly"]


@pytest.mark.slow
async def test_sighup_reloads_the_triggers_table(tmp_path: Path, served: list[Served]) -> None:
    # A gateway started with no [[triggers]] has none to reload (it needs a restart for its first).
    hourly = '[[triggers]]\nname = "hourly"\nfunction = "version"\nevery = "1h"\n'
    gateway = serve_module(tmp_path, config="[router]\nenabled = false\n" + hourly)
    served.append(gateway)
    toml = gateway.module.parent / "toolmesh.toml"
    toml.write_text(toml.read_text() + '[[triggers]]\nname = "beat"\nfunction = "version"\nevery = "1s"\n')
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:

        async def beats() -> int:
            jobs = (await http.get("/v1/jobs?limit=1000")).json()["jobs"]
            return len([j for j in jobs if j.get("trigger") == "beat"])

        await asyncio.sleep(1.5)
        assert await beats() == 0, "an edit alone changes nothing"
        gateway.process.send_signal(signal.SIGHUP)
        await asyncio.sleep(3.0)
        assert await beats() >= 1
        toml.write_text(
            toml.read_text().replace('[[triggers]]\nname = "beat"', '[[triggers]]\nname = "other"')
        )
        gateway.process.send_signal(signal.SIGHUP)
        await asyncio.sleep(1.5)
        before = await beats()
        await asyncio.sleep(1.5)
        assert await beats() == before, "the renamed trigger's old name fires no more"
    gateway.stop()
