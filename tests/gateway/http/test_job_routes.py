"""Asynchronous calls over HTTP on a real gateway with real pods: submit, poll, results, keys,
refusals at submit, the queue's bound, dead letters and their retry, signed callbacks."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import PodProcess
from tests.gateway.conftest import Receiver, StartGateway, finished, runtime, wait_job
from toolmesh.config import KeyConfig, hash_key
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.gateway.jobs.callbacks import SIGNATURE_HEADER, verify_signature

ASYNC = {"Prefer": "respond-async"}


def error_of(response: httpx.Response) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    return dict(response.json()["error"])


async def test_submit_answers_202_and_the_job_holds_the_result(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        response = await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3}, headers=ASYNC)
        assert response.status_code == 202, response.text
        job = response.json()
        assert job["status"] == "queued" and job["id"].startswith("job_")
        assert response.headers["location"] == job["status_url"] == f"/v1/jobs/{job['id']}"
        assert response.headers["preference-applied"] == "respond-async"
        done = await wait_job(http, job["id"], finished)
        assert done["status"] == "succeeded" and done["attempts"] == 1
        assert done["result"]["structured"] == 5 and done["result"]["is_error"] is False

        # The explicit form, with the arguments in a field.
        response = await http.post("/v1/jobs", json={"function": "echo", "arguments": {"text": "hi"}})
        assert response.status_code == 202
        done = await wait_job(http, response.json()["id"], finished)
        assert done["result"]["content"] == [{"type": "text", "text": "hi"}]

        # A function that raises is final at once: another attempt would raise again.
        response = await http.post("/v1/functions/fail/invoke", json={"message": "nope"}, headers=ASYNC)
        done = await wait_job(http, response.json()["id"], finished)
        assert done["status"] == "failed" and done["attempts"] == 1
        assert done["error"]["code"] == "function_error" and done["result"]["is_error"] is True

        listed = (await http.get("/v1/jobs")).json()["jobs"]
        assert [j["function"] for j in listed] == ["fail", "echo", "add"]
        # Without the preference, the same route still calls synchronously.
        response = await http.post("/v1/functions/add/invoke", json={"a": 2})
        assert response.status_code == 200 and response.json()["structured"] == 3


async def test_a_job_is_seen_only_by_the_key_that_submitted_it(gateway_factory: StartGateway) -> None:
    keys = [
        KeyConfig(name="alice", key_hash=hash_key("alice-key")),
        KeyConfig(name="bob", key_hash=hash_key("bob-key")),
    ]
    gateway = await gateway_factory(keys=keys)
    alice = httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer alice-key"})
    bob = httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer bob-key"})
    async with alice, bob:
        job = (await alice.post("/v1/functions/add/invoke", json={"a": 1}, headers=ASYNC)).json()
        await wait_job(alice, job["id"], finished)
        for response in (
            await bob.get(f"/v1/jobs/{job['id']}"),
            await bob.post(f"/v1/jobs/{job['id']}/retry"),
            await bob.delete(f"/v1/jobs/{job['id']}"),
            await alice.get("/v1/jobs/job_doesnotexist"),
        ):
            assert response.status_code == 404 and error_of(response)["code"] == "job_not_found"
        assert (await bob.get("/v1/jobs")).json() == {"jobs": []}
        assert len((await alice.get("/v1/jobs")).json()["jobs"]) == 1
        async with httpx.AsyncClient(base_url=gateway.url) as anonymous:
            assert (await anonymous.get(f"/v1/jobs/{job['id']}")).status_code == 401


async def test_mistakes_are_refused_at_submit_never_with_a_5xx(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:

        async def invoke(name: str, body: Any, **headers: str) -> dict[str, Any]:
            response = await http.post(
                f"/v1/functions/{name}/invoke", content=json.dumps(body), headers={**ASYNC, **headers}
            )
            return {"status": response.status_code, **error_of(response)}

        assert (await invoke("nope", {}))["code"] == "function_not_found"
        wrong = await invoke("add", {"a": "2"})
        assert wrong["status"] == 422 and wrong["violations"][0]["path"] == "a"
        assert "expected integer" in wrong["message"]
        missing = await invoke("add", {"b": 1, "c": 2})
        assert {v["path"] for v in missing["violations"]} == {"a", "c"}
        assert (await invoke("add", [1]))["status"] == 400
        # No signing secret is configured, so no callback can be sent.
        refused = await invoke("add", {"a": 1}, **{"X-Callback-Url": "http://127.0.0.1:9/hook"})
        assert refused["param"] == "callback_url" and "callback_secret_env" in refused["message"]

        for body in (
            [],
            {"function": 5},
            {"function": "add", "arguments": [1]},
            {"function": "add", "arguments": {"a": 1}, "extra": 1},
            {"function": "add", "arguments": {"a": 1}, "callback_url": 7},
        ):
            response = await http.post("/v1/jobs", content=json.dumps(body))
            assert response.status_code == 400, (body, response.text)
        for query in ("status=bogus", "limit=abc", "limit=0", "limit=100000"):
            assert (await http.get(f"/v1/jobs?{query}")).status_code == 400
        # Nothing was queued by any of it.
        assert (await http.get("/v1/jobs")).json() == {"jobs": []}


async def test_callback_urls_are_checked(gateway_factory: StartGateway) -> None:
    jobs = JobsConfig(callback_secret_env="HOOK_SECRET")
    gateway = await gateway_factory(
        environ={"HOOK_SECRET": "s3cret"}, jobs=jobs.model_copy(update={"path": None})
    )
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        for url in (
            "ftp://example.com/x",
            "not a url",
            "http://",
            "http://h:99999/",
            "http://\u00e9.com/",
            # Not public, and not in [jobs] callback_hosts: loopback, cloud metadata, private.
            "http://127.0.0.1:8080/hook",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:10.0.0.1]/x",
            "https://192.168.1.10/x",
        ):
            response = await http.post(
                "/v1/jobs", json={"function": "add", "arguments": {"a": 1}, "callback_url": url}
            )
            assert response.status_code == 400 and error_of(response)["param"] == "callback_url", url


async def test_a_callback_to_a_name_that_resolves_inside_is_not_sent(
    gateway_factory: StartGateway, receiver: Receiver, tmp_path: Any
) -> None:
    # "localhost" passes the submit (a name), but resolves to loopback when the callback is due.
    jobs = JobsConfig(
        path=tmp_path / "inside.sqlite3",
        callback_secret_env="HOOK_SECRET",
        callback_backoff=0.05,
        callback_attempts=2,
    )
    gateway = await gateway_factory(environ={"HOOK_SECRET": "s3cret"}, jobs=jobs)
    url = receiver.url.replace("127.0.0.1", "localhost")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        headers = {**ASYNC, "X-Callback-Url": url}
        job = (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=headers)).json()
        done = await wait_job(http, job["id"], lambda d: d["callback"]["state"] != "pending")
    assert done["callback"] == {"url": url, "state": "failed", "attempts": 2}
    assert done["status"] == "succeeded", "the result is kept"
    assert receiver.attempts == 0, "nothing reached the loopback receiver"

    # Allowed by network, the same name is sent to the address that was checked, named in Host.
    allowed = jobs.model_copy(
        update={"path": tmp_path / "allowed.sqlite3", "callback_hosts": ("127.0.0.0/8", "::1")}
    )
    gateway = await gateway_factory(environ={"HOOK_SECRET": "s3cret"}, jobs=allowed)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        headers = {**ASYNC, "X-Callback-Url": url}
        job = (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=headers)).json()
        (delivery,) = await receiver.wait_for(1)
    assert delivery.headers["host"] == url.split("/")[2]
    assert json.loads(delivery.body)["id"] == job["id"]


async def test_the_queue_is_bounded_and_queued_or_running_jobs_can_be_cancelled(
    gateway_factory: StartGateway, tmp_path: Any
) -> None:
    gateway = await gateway_factory(jobs=JobsConfig(path=tmp_path / "bound.sqlite3", max_queued=2, workers=1))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        first = (await http.post("/v1/functions/block/invoke", json={"seconds": 1.0}, headers=ASYNC)).json()
        second = (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=ASYNC)).json()
        full = await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=ASYNC)
        assert full.status_code == 503 and "retry-after" in full.headers
        error = error_of_5xx(full)
        assert error["code"] == "overloaded" and "max_queued" in error["message"]
        await wait_job(http, first["id"], lambda d: d["status"] == "running")
        cancelled = await http.delete(f"/v1/jobs/{second['id']}")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=ASYNC)).status_code == 202
        # Running: its call is stopped, and the job stays cancelled.
        stopped = await http.delete(f"/v1/jobs/{first['id']}")
        assert stopped.status_code == 200 and stopped.json()["status"] == "cancelled"
        # Finished: too late to cancel.
        assert (await http.delete(f"/v1/jobs/{first['id']}")).status_code == 400
        assert (await wait_job(http, second["id"], finished))["status"] == "cancelled"
        await asyncio.sleep(1.2)  # past the end of the blocked call, had it not been stopped
        assert (await http.get(f"/v1/jobs/{first['id']}")).json()["status"] == "cancelled"


def error_of_5xx(response: httpx.Response) -> dict[str, Any]:
    return dict(response.json()["error"])


async def test_submit_spends_the_keys_rate(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(keys=[KeyConfig(name="slow", key_hash=hash_key("k"), rate=0.01, burst=1)])
    async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer k"}) as http:
        assert (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=ASYNC)).status_code == 202
        limited = await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=ASYNC)
        assert limited.status_code == 429


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_unavailable_runtime_ends_dead_and_a_retry_runs_it_again(
    gateway_factory: StartGateway, pod_process: Callable[..., PodProcess], tmp_path: Any
) -> None:
    # A runtime whose pods run elsewhere, at a port where nothing listens yet.
    port = _free_port()
    remote = runtime("remote", "sample_tools", address=f"127.0.0.1:{port}", startup_timeout=0.2)
    jobs = JobsConfig(path=tmp_path / "dead.sqlite3", max_attempts=3, backoff=0.05)
    gateway = await gateway_factory(remote, jobs=jobs)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        job = (await http.post("/v1/functions/echo/invoke", json={"text": "back"}, headers=ASYNC)).json()
        dead = await wait_job(http, job["id"], finished)
        assert dead["status"] == "dead" and dead["attempts"] == 3
        assert dead["error"]["code"] == "unavailable" and "after 3 attempts" in dead["error"]["message"]
        letters = (await http.get("/v1/jobs?status=dead")).json()["jobs"]
        assert [j["id"] for j in letters] == [job["id"]]
        # Still dead: nothing to retry yet but the letter itself.
        assert (await http.get("/v1/jobs?status=succeeded")).json() == {"jobs": []}

        pod_process("sample_tools", args=["--port", str(port)])
        again = await http.post(f"/v1/jobs/{job['id']}/retry")
        assert again.status_code == 202 and again.json()["status"] == "queued"
        assert again.json()["attempts"] == 0
        done = await wait_job(http, job["id"], finished)
        assert done["status"] == "succeeded", done
        assert done["result"]["content"] == [{"type": "text", "text": "back"}]
        assert (await http.get("/v1/jobs?status=dead")).json() == {"jobs": []}
        # Only dead, failed and cancelled jobs are retried.
        assert (await http.post(f"/v1/jobs/{job['id']}/retry")).status_code == 400


async def test_callbacks_arrive_once_signed_and_are_retried(
    gateway_factory: StartGateway, receiver: Receiver, tmp_path: Any
) -> None:
    receiver.statuses = [500]  # the first delivery fails
    jobs = JobsConfig(
        path=tmp_path / "hooks.sqlite3",
        callback_secret_env="HOOK_SECRET",
        callback_backoff=0.05,
        callback_hosts=("127.0.0.1",),
    )
    gateway = await gateway_factory(environ={"HOOK_SECRET": "s3cret"}, jobs=jobs)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        headers = {**ASYNC, "X-Callback-Url": receiver.url}
        first = (await http.post("/v1/functions/add/invoke", json={"a": 40, "b": 2}, headers=headers)).json()
        second = (await http.post("/v1/functions/fail/invoke", json={}, headers=headers)).json()
        delivered = await receiver.wait_for(2)
        done = await wait_job(http, first["id"], lambda d: d["callback"]["state"] == "delivered")
        await wait_job(http, second["id"], lambda d: d["callback"]["state"] == "delivered")
    by_job = {d.headers["x-toolmesh-job-id"]: d for d in delivered}
    for job_id, delivery in by_job.items():
        assert delivery.headers["idempotency-key"].startswith(job_id + ".")
    assert set(by_job) == {first["id"], second["id"]}
    for delivery in delivered:
        assert verify_signature("s3cret", delivery.body, delivery.headers[SIGNATURE_HEADER.lower()])
        assert not verify_signature("other", delivery.body, delivery.headers[SIGNATURE_HEADER.lower()])
        assert not verify_signature(
            "s3cret", delivery.body + b" ", delivery.headers[SIGNATURE_HEADER.lower()]
        )
    document = json.loads(by_job[first["id"]].body)
    assert document["status"] == "succeeded" and document["result"]["structured"] == 42
    assert json.loads(by_job[second["id"]].body)["status"] == "failed"
    assert receiver.attempts == 3, "one delivery failed with 500 and was retried"
    assert done["callback"]["attempts"] in (1, 2)
    # Nothing more arrives: each result once.
    await asyncio.sleep(0.8)
    assert len(receiver.deliveries) == 2 and receiver.attempts == 3


async def test_a_callback_that_keeps_failing_is_given_up_and_the_result_kept(
    gateway_factory: StartGateway, receiver: Receiver, tmp_path: Any
) -> None:
    receiver.statuses = [500, 503, 500, 500]
    jobs = JobsConfig(
        path=tmp_path / "hooks.sqlite3",
        callback_secret_env="HOOK_SECRET",
        callback_backoff=0.05,
        callback_attempts=2,
        callback_hosts=("127.0.0.1",),
    )
    gateway = await gateway_factory(environ={"HOOK_SECRET": "s3cret"}, jobs=jobs)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        headers = {**ASYNC, "X-Callback-Url": receiver.url}
        job = (await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=headers)).json()
        done = await wait_job(http, job["id"], lambda d: d["callback"]["state"] != "pending")
        assert done["callback"] == {"url": receiver.url, "state": "failed", "attempts": 2}
        assert done["status"] == "succeeded" and done["result"]["structured"] == 2
        await asyncio.sleep(0.5)
        assert receiver.attempts == 2 and receiver.deliveries == []


async def test_a_job_may_run_longer_than_a_direct_call(gateway_factory: StartGateway, tmp_path: Any) -> None:
    jobs = JobsConfig(path=tmp_path / "long.sqlite3", call_timeout=10)
    gateway = await gateway_factory(jobs=jobs, call_timeout=0.5)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        direct = await http.post("/v1/functions/block/invoke", json={"seconds": 1.5})
        assert direct.status_code == 504, "a direct call is held to [gateway] call_timeout"
        job = (await http.post("/v1/functions/block/invoke", json={"seconds": 1.5}, headers=ASYNC)).json()
        done = await wait_job(http, job["id"], finished)
    assert done["status"] == "succeeded", done
