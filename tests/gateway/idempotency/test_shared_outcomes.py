"""Keyed calls across gateway replicas: two gateways on one real redis-server (or one data
directory) share the outcomes, and a replica SIGKILLed mid-call never gets its call run twice."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.gateway.conftest import StartGateway, StartUp, Up, runtime
from tests.gateway.core.test_keyed_calls import KEYED, call, runs, started
from tests.gateway.mcp.test_input_requests import Answers, text
from tests.gateway.state.conftest import RedisServer
from toolmesh.config import StateConfig

KEYED_RUNTIME = '[[runtimes]]\nname = "keyed"\nmodules = ["keyed_tools"]\nmin_replicas = 1\n'
#: No access log (an unread stderr pipe must not fill); a short lease so a dead replica is
#: recognised in about a second.
GATEWAY = "access_log = false\nidempotency_lease = 1.0\n"


async def test_two_gateways_on_one_redis_share_outcomes_and_run_a_call_once(
    gateway_factory: StartGateway, redis_server: RedisServer, tmp_path: Path
) -> None:
    state = StateConfig(url=redis_server.url)
    gateways = [await gateway_factory(KEYED, state=state) for _ in range(2)]
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        first = await call(http, gateways[0], "append", {"path": str(log), "text": "a"}, "shared-1")
        again = await call(http, gateways[1], "append", {"path": str(log), "text": "a"}, "shared-1")
        assert again.headers["idempotent-replayed"] == "true" and again.json() == first.json()
        other = await call(http, gateways[1], "append", {"path": str(log), "text": "b"}, "shared-1")
        assert other.status_code == 422
        # Concurrent repeats on both replicas while the first runs: one run, one outcome.
        slow = {"path": str(log), "text": "slow", "seconds": 0.8}
        answers = await asyncio.gather(
            *(call(http, gateways[i % 2], "slow_append", slow, "shared-2") for i in range(6))
        )
        assert [a.status_code for a in answers] == [200] * 6
        assert len({a.json()["structured"] for a in answers}) == 1
    assert runs(log) == ["a", "slow"]


async def test_an_mcp_tools_call_with_the_header_runs_once(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await gateway_factory(KEYED)
    log = tmp_path / "log"
    async with (
        httpx2.AsyncClient(headers={"Idempotency-Key": "mcp-1"}, timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        answers = [await client.call_tool("append", {"path": str(log), "text": "m"}) for _ in range(3)]
    assert [a.is_error for a in answers] == [False] * 3
    assert len({json.dumps(a.structured_content) for a in answers}) == 1
    assert runs(log) == ["m"]


def kill_mid_call(
    gateway: Up, survivor: Up, log: Path, function: str, key: str
) -> tuple[httpx.Response, list[str]]:
    """Send a keyed slow call to `gateway`, SIGKILL it once the function started, then send the
    same call to `survivor`; its answer, and the runs started, once things settled."""

    async def scenario() -> httpx.Response:
        arguments = {"path": str(log), "text": key, "seconds": 1.0}
        body = json.dumps(arguments).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        async with httpx.AsyncClient(timeout=30) as http:
            doomed = asyncio.create_task(
                http.post(
                    f"http://127.0.0.1:{gateway.http_port}/v1/functions/{function}/invoke",
                    content=body,
                    headers=headers,
                )
            )
            await started(log, len([line for line in runs(Path(f"{log}.started")) if line == key]) + 1, key)
            gateway.process.kill()
            gateway.process.communicate(timeout=10)
            with pytest.raises(httpx.TransportError):
                await doomed
            # What a load balancer does next: the same request to the other upstream.
            return await http.post(
                f"http://127.0.0.1:{survivor.http_port}/v1/functions/{function}/invoke",
                content=body,
                headers=headers,
            )

    answer = asyncio.run(scenario())
    return answer, [line for line in runs(Path(f"{log}.started")) if line == key]


def replicas(up: StartUp, env: dict[str, str]) -> tuple[Up, Up]:
    return up(GATEWAY, KEYED_RUNTIME, env=env), up(GATEWAY, KEYED_RUNTIME, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["redis", "data_dir"])
def test_a_replica_killed_mid_call_is_never_run_twice_for_a_non_idempotent_function(
    up: StartUp, redis_server: RedisServer, tmp_path: Path, where: str
) -> None:
    # Two `toolmesh up` from one config file share its project's data directory (SQLite), or Redis.
    env = {"TOOLMESH_STATE_URL": redis_server.url} if where == "redis" else {}
    doomed, survivor = replicas(up, env)
    log = tmp_path / "log"
    for round_ in range(3):
        key = f"kill-{round_}"
        answer, began = kill_mid_call(doomed, survivor, log, "slow_append", key)
        assert answer.status_code == 409, (answer.headers, answer.text, began, runs(log))
        error = answer.json()["error"]
        assert error["code"] == "outcome_unknown"
        assert "whether the function ran is unknown" in error["message"]
        assert began == [key], "the survivor never started the call again"
        doomed = up(GATEWAY, KEYED_RUNTIME, env=env)

    # Every repeat keeps saying so, and nothing runs.
    body = {"path": str(log), "text": "kill-0", "seconds": 1.0}
    url = f"http://127.0.0.1:{survivor.http_port}/v1/functions/slow_append/invoke"
    repeat = httpx.post(url, json=body, headers={"Idempotency-Key": "kill-0"}, timeout=30)
    assert repeat.status_code == 409 and repeat.json()["error"]["code"] == "outcome_unknown"
    assert runs(Path(f"{log}.started")) == ["kill-0", "kill-1", "kill-2"]


@pytest.mark.slow
def test_a_replica_killed_mid_call_of_an_idempotent_function_is_run_again_elsewhere(
    up: StartUp, redis_server: RedisServer, tmp_path: Path
) -> None:
    env = {"TOOLMESH_STATE_URL": redis_server.url}
    doomed, survivor = replicas(up, env)
    log = tmp_path / "log"
    for round_ in range(2):
        key = f"again-{round_}"
        answer, began = kill_mid_call(doomed, survivor, log, "slow_record", key)
        assert answer.status_code == 200, answer.text
        assert "idempotent-replayed" not in answer.headers
        assert began == [key, key]
        doomed = up(GATEWAY, KEYED_RUNTIME, env=env)


async def test_a_keyed_call_while_redis_is_away_is_a_retryable_503_and_runs_nothing(
    gateway_factory: StartGateway, redis_server: RedisServer, tmp_path: Path
) -> None:
    gateway = await gateway_factory(KEYED, state=StateConfig(url=redis_server.url, timeout=0.5))
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        for round_ in range(3):
            arguments = {"path": str(log), "text": str(round_)}
            redis_server.stop()
            refused = await call(http, gateway, "append", arguments, f"outage-{round_}")
            assert refused.status_code == 503 and refused.json()["error"]["code"] == "state_unavailable"
            assert "retry-after" in refused.headers
            redis_server.start()
            # The first command after the restart may meet a pooled connection Redis closed: a
            # retryable 503 too, which the caller retries with the same key.
            for _ in range(5):
                answer = await call(http, gateway, "append", arguments, f"outage-{round_}")
                if answer.status_code != 503:
                    break
            assert answer.status_code == 200 and "idempotent-replayed" not in answer.headers
            again = await call(http, gateway, "append", arguments, f"outage-{round_}")
            assert again.headers["idempotent-replayed"] == "true" and again.json() == answer.json()
    assert runs(log) == ["0", "1", "2"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_keyed_mcp_call_that_asks_its_caller_is_answered_then_replays(
    gateway_factory: StartGateway, mode: str
) -> None:
    # The asks of the first call are answered as usual under the key; once it finished, a
    # repeat answers from its outcome without asking anything.
    gateway = await gateway_factory(runtime("tools", "asking_tools"))
    answers = Answers(content={"city": "Lyon", "days": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with (
            httpx2.AsyncClient(headers={"Idempotency-Key": f"ask-{mode}"}, timeout=30) as http,
            Client(
                streamable_http_client(f"{gateway.url}/mcp", http_client=http),
                mode=mode,
                elicitation_callback=answers.elicit,
            ) as client,
        ):
            results = [await client.call_tool("plan", {}) for _ in range(2)]
    assert [text(r) for r in results] == ["3 days in Lyon"] * 2
    assert answers.asked == ["Where to?"]
