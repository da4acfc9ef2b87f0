"""`Idempotency-Key` on a real gateway with real pods: a repeat answers the stored outcome and the
function runs once (counted in the file it appends to), whatever the surface."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import KeyConfig, hash_key
from toolmesh.gateway.server import Gateway
from toolmesh.v1 import invoke_pb2, mesh_pb2_grpc

KEYED = runtime("keyed", "keyed_tools")


def runs(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def started(log: Path, count: int = 1, text: str | None = None) -> None:
    """Once a slow function's run (of `text`, if given) has begun `count` times (its `.started` file)."""
    for _ in range(1000):
        lines = runs(Path(f"{log}.started"))
        if len([line for line in lines if text is None or line == text]) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{log} was not started {count} times")


async def keyed_gateway(gateway_factory: StartGateway, **settings: Any) -> Gateway:
    return await gateway_factory(KEYED, **settings)


async def call(
    http: httpx.AsyncClient,
    gateway: Gateway,
    function: str,
    arguments: dict[str, Any] | bytes,
    key: str | None,
    **headers: str,
) -> httpx.Response:
    sent = {"Content-Type": "application/json", **headers}
    if key is not None:
        sent["Idempotency-Key"] = key
    body = arguments if isinstance(arguments, bytes) else json.dumps(arguments).encode()
    return await http.post(f"{gateway.url}/v1/functions/{function}/invoke", content=body, headers=sent)


async def test_a_repeat_answers_the_stored_outcome_and_the_function_ran_once(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    arguments = {"path": str(log), "text": "one"}
    async with httpx.AsyncClient(timeout=30) as http:
        first = await call(http, gateway, "append", arguments, "order-1")
        assert first.status_code == 200 and first.json()["structured"] == 1
        assert "idempotent-replayed" not in first.headers
        for _ in range(5):
            # The same arguments in another key order and spacing are the same call.
            again = await call(
                http, gateway, "append", b'{"text": "one",  "path": "%s"}' % str(log).encode(), "order-1"
            )
            assert again.status_code == 200
            assert again.headers["idempotent-replayed"] == "true"
            assert again.json() == first.json()
        unkeyed = await call(http, gateway, "append", arguments, None)
        assert unkeyed.json()["structured"] == 2
    assert runs(log) == ["one", "one"]


async def test_the_same_key_for_another_call_is_422_and_runs_nothing(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await call(http, gateway, "append", {"path": str(log), "text": "a"}, "k")).status_code == 200
        for function, text in (("append", "b"), ("record", "a")):
            answer = await call(http, gateway, function, {"path": str(log), "text": text}, "k")
            assert answer.status_code == 422
            assert answer.json()["error"]["code"] == "idempotency_mismatch"
            assert "Idempotency-Key 'k' was used for another call" in answer.json()["error"]["message"]
    assert runs(log) == ["a"]


async def test_another_callers_same_key_is_another_call(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    keys = [KeyConfig(name=name, key_hash=hash_key(f"secret-{name}")) for name in ("alice", "bob")]
    gateway = await gateway_factory(KEYED, keys=keys)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        for name in ("alice", "bob", "alice", "bob"):
            auth = {"Authorization": f"Bearer secret-{name}"}
            answer = await call(http, gateway, "append", {"path": str(log), "text": "x"}, "shared", **auth)
            assert answer.status_code == 200
    assert runs(log) == ["x", "x"]


async def test_a_repeat_while_the_first_runs_waits_for_its_outcome(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    arguments = {"path": str(log), "text": "slow", "seconds": 1.0}
    async with httpx.AsyncClient(timeout=30) as http:
        for round_ in range(3):
            key = f"wait-{round_}"
            answers = await asyncio.gather(
                *(call(http, gateway, "slow_append", arguments, key) for _ in range(4))
            )
            assert [a.status_code for a in answers] == [200] * 4
            assert len({a.json()["structured"] for a in answers}) == 1
            assert sorted(a.headers.get("idempotent-replayed", "") for a in answers) == [
                "",
                "true",
                "true",
                "true",
            ]
    assert runs(log) == ["slow"] * 3


async def test_a_repeat_that_cannot_wait_long_enough_gets_a_retryable_409(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    arguments = {"path": str(log), "text": "slow", "seconds": 1.5}
    async with (
        httpx.AsyncClient(timeout=30) as http,
        grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel,
    ):
        first = asyncio.create_task(call(http, gateway, "slow_append", arguments, "busy"))
        await started(log)
        stub = mesh_pb2_grpc.MeshStub(channel)
        request = invoke_pb2.InvokeRequest(function="slow_append", arguments=json.dumps(arguments).encode())
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Invoke(request, metadata=(("idempotency-key", "busy"),), timeout=0.5)
        assert refused.value.code() is grpc.StatusCode.ABORTED
        assert "still running" in (refused.value.details() or "")
        assert (await first).status_code == 200
        replayed = stub.Invoke(request, metadata=(("idempotency-key", "busy"),), timeout=5)
        answer = await replayed
        assert json.loads(answer.structured) == 1
        assert ("idempotent-replayed", "true") in tuple(await replayed.trailing_metadata())
    assert runs(log) == ["slow"]


async def test_an_outcome_is_kept_for_the_configured_time_then_the_key_is_free(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory, idempotency_ttl=1.0)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(2):
            await call(http, gateway, "append", {"path": str(log), "text": "t"}, "short-lived")
        assert runs(log) == ["t"]
        await asyncio.sleep(1.3)
        again = await call(http, gateway, "append", {"path": str(log), "text": "t"}, "short-lived")
        assert "idempotent-replayed" not in again.headers
    assert runs(log) == ["t", "t"]


async def test_a_function_error_is_an_outcome_but_a_refusal_that_ran_nothing_is_not(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        failed = [
            await call(http, gateway, "append_and_fail", {"path": str(log), "text": "f"}, "e")
            for _ in range(3)
        ]
        assert all(a.status_code == 200 and a.json()["is_error"] for a in failed)
        assert [a.headers.get("idempotent-replayed") for a in failed] == [None, "true", "true"]
        assert runs(log) == ["f"]
        # Arguments the schema refuses ran nothing: the caller fixes them and sends the same key.
        wrong = await call(http, gateway, "append", {"path": str(log), "text": 5}, "fix-me")
        assert wrong.status_code == 422 and wrong.json()["error"]["code"] == "invalid_arguments"
        fixed = await call(http, gateway, "append", {"path": str(log), "text": "g"}, "fix-me")
        assert fixed.status_code == 200 and "idempotent-replayed" not in fixed.headers
    assert runs(log) == ["f", "g"]


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("k" * 256, "at most 255 printable ASCII characters"),
        ("caf\u00e9", "at most 255 printable ASCII characters"),
    ],
)
async def test_a_bad_key_is_400_naming_the_header(
    gateway_factory: StartGateway, tmp_path: Path, key: str, problem: str
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        headers = {"Content-Type": "application/json", "Idempotency-Key": key.encode("latin-1")}
        answer = await http.post(
            f"{gateway.url}/v1/functions/append/invoke",
            content=json.dumps({"path": str(log), "text": "x"}).encode(),
            headers=headers,  # type: ignore[arg-type]
        )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_request" and error["param"] == "Idempotency-Key"
    assert problem in error["message"]
    assert runs(log) == []


@pytest.mark.parametrize("key", ["   ", " padded", "k" * 256])
async def test_a_bad_key_in_grpc_metadata_is_invalid_argument(
    gateway_factory: StartGateway, tmp_path: Path, key: str
) -> None:
    # HTTP strips a header value's spaces before the gateway sees it; gRPC metadata keeps them.
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    arguments = json.dumps({"path": str(log), "text": "x"}).encode()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
        stub = mesh_pb2_grpc.MeshStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Invoke(
                invoke_pb2.InvokeRequest(function="append", arguments=arguments),
                metadata=(("idempotency-key", key),),
                timeout=10,
            )
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "idempotency-key must" in (refused.value.details() or "")
    assert runs(log) == []


async def test_a_streamed_call_with_a_key_is_refused(gateway_factory: StartGateway, tmp_path: Path) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await call(
            http, gateway, "append", {"path": str(log), "text": "x"}, "s", Accept="text/event-stream"
        )
    assert "a streamed call takes no Idempotency-Key" in answer.text
    assert runs(log) == []


async def test_each_call_of_a_keyed_batch_runs_once(gateway_factory: StartGateway, tmp_path: Path) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    batch = {
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "append", "arguments": json.dumps({"path": str(log), "text": str(i)})},
            }
            for i in range(3)
        ]
    }
    async with httpx.AsyncClient(timeout=30) as http:
        answers = [
            await http.post(f"{gateway.url}/v1/tool_calls", json=batch, headers={"Idempotency-Key": "batch"})
            for _ in range(3)
        ]
    assert all(a.status_code == 200 for a in answers)
    assert answers[0].json() == answers[2].json()
    assert sorted(runs(log)) == ["0", "1", "2"]


async def test_a_pod_dying_mid_call_leaves_an_unknown_outcome_that_is_never_run_again(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        for round_ in range(3):
            arguments = {"path": str(log), "text": str(round_)}
            died = await call(http, gateway, "append_and_die", arguments, f"die-{round_}")
            assert died.status_code == 503 and "died mid-call" in died.json()["error"]["message"]
            for _ in range(2):
                repeat = await call(http, gateway, "append_and_die", arguments, f"die-{round_}")
                assert repeat.status_code == 409, repeat.text
                assert repeat.json()["error"]["code"] == "outcome_unknown"
                assert "died mid-call" in repeat.json()["error"]["message"]
    assert runs(log) == ["0", "1", "2"]


async def test_a_timeout_is_the_outcome_a_repeat_gets(gateway_factory: StartGateway, tmp_path: Path) -> None:
    gateway = await keyed_gateway(gateway_factory)
    log = tmp_path / "log"
    async with httpx.AsyncClient(timeout=30) as http:
        answers = [
            await call(http, gateway, "append_and_hang", {"path": str(log), "text": "h"}, "hang")
            for _ in range(3)
        ]
    assert [a.status_code for a in answers] == [504] * 3
    # Refused again as the first was (an error, so without the replay header), and not rerun.
    assert len({a.json()["error"]["message"] for a in answers}) == 1
    assert runs(log) == ["h"]
