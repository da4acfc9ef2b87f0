"""`Idempotency-Key` on job submits, on a real gateway with real pods: one job per key and
caller however often (and however concurrently) it is sent, through either submit route; the
key with another call is a 422; the job runs once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.gateway.conftest import StartGateway, finished, runtime, wait_job
from toolmesh.config import KeyConfig, hash_key

ASYNC = {"Prefer": "respond-async"}
ROUNDS = 8
AT_ONCE = 6


async def test_repeats_of_a_keyed_submit_answer_one_job_that_runs_once(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await gateway_factory(runtime("replica", "replica_tools"))
    marks = tmp_path / "marks.txt"
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        for round_ in range(ROUNDS):
            key = {"Idempotency-Key": f"key-{round_}"}
            body = {"function": "append_line", "arguments": {"path": str(marks), "line": f"run {round_}"}}
            # Sent at once, as a client retrying through two replicas would: one job for all.
            responses = await asyncio.gather(
                *(http.post("/v1/jobs", json=body, headers=key) for _ in range(AT_ONCE))
            )
            # 202 while the job runs; a repeat that comes after it finished is a 200.
            assert {r.status_code for r in responses} <= {200, 202}, [r.text for r in responses]
            ids = {r.json()["id"] for r in responses}
            assert len(ids) == 1, ids
            made = [r for r in responses if "idempotent-replayed" not in r.headers]
            assert len(made) == 1 and made[0].status_code == 202, "exactly one submit made the job"
            assert {r.headers.get("idempotent-replayed") for r in responses} == {None, "true"}
            (job_id,) = ids
            done = await wait_job(http, job_id, finished)
            assert done["status"] == "succeeded", done
            # Once finished, a repeat answers the job with its result: 200.
            again = await http.post("/v1/jobs", json=body, headers=key)
            assert again.status_code == 200 and again.json()["id"] == job_id, again.text
            assert again.json()["result"] == done["result"] and again.headers["idempotent-replayed"] == "true"
            assert again.headers["location"] == f"/v1/jobs/{job_id}"
            # The invoke route's asynchronous form shares the keys.
            invoked = await http.post(
                "/v1/functions/append_line/invoke", json=body["arguments"], headers={**key, **ASYNC}
            )
            assert invoked.status_code == 200 and invoked.json()["id"] == job_id, invoked.text
        listed = (await http.get("/v1/jobs", params={"limit": 1000})).json()["jobs"]
        assert len(listed) == ROUNDS
    assert marks.read_text().splitlines() == [f"run {i}" for i in range(ROUNDS)], "each ran once"


async def test_a_key_reused_for_another_call_is_a_422_and_keys_are_per_caller(
    gateway_factory: StartGateway,
) -> None:
    keys = [
        KeyConfig(name="alice", key_hash=hash_key("alice-key")),
        KeyConfig(name="bob", key_hash=hash_key("bob-key")),
    ]
    gateway = await gateway_factory(keys=keys)
    alice = httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer alice-key"})
    bob = httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer bob-key"})
    async with alice, bob:
        key = {"Idempotency-Key": "order-17"}
        first = await alice.post(
            "/v1/jobs", json={"function": "add", "arguments": {"a": 1, "b": 2}}, headers=key
        )
        assert first.status_code == 202, first.text
        # The same arguments in another order are the same call.
        same = await alice.post(
            "/v1/jobs", json={"function": "add", "arguments": {"b": 2, "a": 1}}, headers=key
        )
        assert same.json()["id"] == first.json()["id"]
        for other in (
            {"function": "add", "arguments": {"a": 5}},
            {"function": "echo", "arguments": {"text": "x"}},
        ):
            refused = await alice.post("/v1/jobs", json=other, headers=key)
            assert refused.status_code == 422, refused.text
            error = refused.json()["error"]
            assert error["code"] == "idempotency_mismatch" and first.json()["id"] in error["message"], error
        # Bob's same key is his own: another job.
        theirs = await bob.post("/v1/jobs", json={"function": "add", "arguments": {"a": 9}}, headers=key)
        assert theirs.status_code == 202 and theirs.json()["id"] != first.json()["id"]
        for bad in ("x" * 256, "tab\there"):
            refused = await alice.post(
                "/v1/jobs", json={"function": "add", "arguments": {"a": 1}}, headers={"Idempotency-Key": bad}
            )
            assert refused.status_code == 400 and refused.json()["error"]["param"] == "Idempotency-Key"
        assert len((await alice.get("/v1/jobs")).json()["jobs"]) == 1
