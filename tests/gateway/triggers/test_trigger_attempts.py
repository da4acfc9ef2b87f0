"""A trigger's `max_attempts` bounds its jobs' attempts (others keep `[jobs] max_attempts`): a
runtime that stays unavailable makes the trigger's job dead after its own count. Real gateway,
a runtime whose pods are away."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx

from tests.gateway.conftest import StartGateway, finished, runtime, wait_job
from toolmesh.config.jobs_config import JobsConfig, TriggerConfig

ASYNC = {"Prefer": "respond-async"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_triggers_jobs_have_its_own_attempts(gateway_factory: StartGateway, tmp_path: Path) -> None:
    remote = runtime("remote", "sample_tools", address=f"127.0.0.1:{free_port()}", startup_timeout=0.2)
    jobs = JobsConfig(path=tmp_path / "jobs.sqlite3", max_attempts=4, backoff=0.05)
    nightly = TriggerConfig(
        name="nightly", function="echo", every="1h", arguments={"text": "x"}, max_attempts=2
    )
    gateway = await gateway_factory(remote, jobs=jobs, triggers=[nightly])
    assert gateway.triggers is not None
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        for _ in range(3):  # each run of the trigger, not just the first
            job = await gateway.triggers.run("nightly")
            dead = await wait_job(http, job.id, finished)
            assert dead["status"] == "dead" and dead["attempts"] == 2, dead
            assert "after 2 attempts" in dead["error"]["message"]
        # A caller's job of the same function keeps [jobs] max_attempts.
        mine = (await http.post("/v1/functions/echo/invoke", json={"text": "y"}, headers=ASYNC)).json()
        assert (await wait_job(http, mine["id"], finished))["attempts"] == 4
