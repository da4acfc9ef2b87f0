"""Jobs in a real redis-server: two `toolmesh up` gateways share one queue, so a job submitted to
one is finished by the other when the first is killed (SIGKILL) mid-job; Redis going away and
coming back empty."""

from __future__ import annotations

import asyncio
import os
import signal

import httpx
import pytest

from tests.gateway.conftest import StartGateway, StartUp
from tests.gateway.jobs.test_restart import REPLICA_TOOLS, _wait
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import StateConfig
from toolmesh.config.jobs_config import JobsConfig

pytestmark = pytest.mark.slow


def test_a_job_of_a_killed_gateway_is_finished_by_the_other(up: StartUp, redis_server: RedisServer) -> None:
    env = {"TOOLMESH_STATE_URL": redis_server.url}
    # A short lease, so the survivor takes the job within about a second of the kill.
    jobs = "\n[jobs]\nlease = 1.0\n" + REPLICA_TOOLS  # `nap`: idempotent, so it runs again
    # No access log: the fixture never reads stderr, and a full pipe would block the gateway.
    first, second = [up("access_log = false\n", runtimes=jobs, env=env) for _ in range(2)]
    one = httpx.Client(base_url=f"http://127.0.0.1:{first.http_port}", timeout=10)
    two = httpx.Client(base_url=f"http://127.0.0.1:{second.http_port}", timeout=10)
    with one, two:
        # The second is stopped while the job is claimed, so that the first surely runs it.
        os.kill(second.process.pid, signal.SIGSTOP)
        try:
            submitted = one.post(
                "/v1/functions/nap/invoke", json={"seconds": 3.0}, headers={"Prefer": "respond-async"}
            )
            assert submitted.status_code == 202, submitted.text
            job_id = submitted.json()["id"]
            assert _wait(one, job_id, {"running"})["attempts"] == 1
        finally:
            os.kill(second.process.pid, signal.SIGCONT)
        assert two.get(f"/v1/jobs/{job_id}").json()["status"] == "running", "one queue, seen from both"
        first.process.kill()
        first.process.communicate(timeout=10)
        done = _wait(two, job_id, {"succeeded", "failed", "dead"})
    assert done["status"] == "succeeded" and done["attempts"] == 2, done
    assert done["result"]["content"] == [{"type": "text", "text": "rested"}]


async def test_jobs_refuse_with_503_while_redis_is_away_and_work_when_it_is_back(
    gateway_factory: StartGateway, redis_server: RedisServer
) -> None:
    jobs = JobsConfig(lease=1.0)
    gateway = await gateway_factory(state=StateConfig(url=redis_server.url, timeout=0.5), jobs=jobs)
    url = f"{gateway.url}/v1/functions/add/invoke"
    async with httpx.AsyncClient(timeout=10, headers={"Prefer": "respond-async"}) as http:
        redis_server.stop()
        refused = await http.post(url, json={"a": 1})
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "state_unavailable"
        # Back empty (no disk): the queue's consumer group is made again at the first claim.
        redis_server.start()
        submitted = await http.post(url, json={"a": 1})
        assert submitted.status_code == 202, submitted.text
        status_url = f"{gateway.url}{submitted.json()['status_url']}"
        for _ in range(200):
            polled = await http.get(status_url)
            # A pooled connection to the Redis that died fails once (503); the next one is new.
            done = polled.json() if polled.status_code == 200 else {"status": "queued"}
            if done["status"] not in ("queued", "running"):
                break
            await asyncio.sleep(0.05)
    assert done["status"] == "succeeded" and done["result"]["structured"] == 2, done
