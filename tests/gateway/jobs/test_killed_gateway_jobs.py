"""Jobs survive their replica: two `toolmesh up` gateways share one queue (a SQLite file on one
machine; a real redis-server), the one running two slow jobs is SIGKILLed mid-run, round after
round. The survivor runs the idempotent job again and ends the other `failed`,
`outcome_unknown`; the dead gateway's pods die with it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.gateway.conftest import StartUp, Up
from tests.gateway.jobs.test_restart import REPLICA_TOOLS, _wait

pytestmark = pytest.mark.slow

ROUNDS = 3


def _submit(http: httpx.Client, function: str) -> str:
    response = http.post(
        f"/v1/functions/{function}/invoke", json={"seconds": 2.0}, headers={"Prefer": "respond-async"}
    )
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def _wait_gone(gateway: Up, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while gateway.runtime_processes():
        assert time.monotonic() < end, f"pods outlived their gateway: {gateway.runtime_processes()}"
        time.sleep(0.05)


@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_the_jobs_of_a_killed_gateway_end_on_the_other_round_after_round(
    up: StartUp, tmp_path: Path, store: str, request: pytest.FixtureRequest
) -> None:
    env: dict[str, str] = {}
    jobs = "\n[jobs]\nlease = 1.0\n"
    if store == "redis":
        env["TOOLMESH_STATE_URL"] = request.getfixturevalue("redis_server").url
    else:
        jobs += f'path = "{tmp_path / "jobs.sqlite3"}"\n'

    def start() -> Up:
        # No access log: the fixture never reads stderr, and a full pipe would block the gateway.
        return up("access_log = false\n", runtimes=jobs + REPLICA_TOOLS, env=env)

    doomed, survivor = start(), start()
    for round_ in range(ROUNDS):
        one = httpx.Client(base_url=f"http://127.0.0.1:{doomed.http_port}", timeout=10)
        two = httpx.Client(base_url=f"http://127.0.0.1:{survivor.http_port}", timeout=10)
        with one, two:
            # The survivor is stopped while the jobs are claimed, so that the doomed one runs them.
            os.kill(survivor.process.pid, signal.SIGSTOP)
            try:
                again, once = _submit(one, "nap"), _submit(one, "nap_once")
                for job_id in (again, once):
                    assert _wait(one, job_id, {"running"})["attempts"] == 1
            finally:
                os.kill(survivor.process.pid, signal.SIGCONT)
            pods = doomed.runtime_processes()
            assert pods, "the gateway runs its pods"
            doomed.process.kill()
            doomed.process.communicate(timeout=10)
            _wait_gone(doomed)
            ran = _wait(two, again, {"succeeded", "failed", "dead"})
            assert ran["status"] == "succeeded" and ran["attempts"] == 2, (round_, ran)
            assert ran["result"]["content"] == [{"type": "text", "text": "rested"}]
            unknown = _wait(two, once, {"succeeded", "failed", "dead"})
            assert unknown["status"] == "failed" and unknown["attempts"] == 1, (round_, unknown)
            assert unknown["error"]["code"] == "outcome_unknown", unknown
            assert "check the effect" in unknown["error"]["message"]
            assert "result" not in unknown
        # The roles swap: the restarted gateway is the survivor of the next round.
        doomed, survivor = survivor, start()
