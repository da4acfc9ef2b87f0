"""Two `toolmesh up` gateways on one redis-server share one job queue: a job submitted to one
is finished by the other when the first is killed (SIGKILL) mid-job."""

from __future__ import annotations

import os
import signal

import httpx
import pytest

from tests.gateway.conftest import StartUp
from tests.gateway.jobs.test_restart import _wait
from tests.gateway.state.conftest import RedisServer

pytestmark = pytest.mark.slow


def test_a_job_of_a_killed_gateway_is_finished_by_the_other(up: StartUp, redis_server: RedisServer) -> None:
    env = {"TOOLMESH_STATE_URL": redis_server.url}
    # A short lease, so the survivor takes the job within about a second of the kill.
    jobs = "\n[jobs]\nlease = 1.0\n"
    # No access log: the fixture never reads stderr, and a full pipe would block the gateway.
    first, second = [up("access_log = false\n", runtimes=jobs, env=env) for _ in range(2)]
    one = httpx.Client(base_url=f"http://127.0.0.1:{first.http_port}", timeout=10)
    two = httpx.Client(base_url=f"http://127.0.0.1:{second.http_port}", timeout=10)
    with one, two:
        # The second is stopped while the job is claimed, so that the first surely runs it.
        os.kill(second.process.pid, signal.SIGSTOP)
        try:
            submitted = one.post(
                "/v1/functions/sync_sleep/invoke", json={"seconds": 3.0}, headers={"Prefer": "respond-async"}
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
    assert done["result"]["content"] == [{"type": "text", "text": "slept"}]
