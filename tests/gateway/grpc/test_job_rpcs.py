"""Jobs over the native gRPC Mesh service: SubmitJob and GetJob share HTTP's jobs, keys and refusals."""

from __future__ import annotations

import asyncio
import json
import time

import httpx

from tests.gateway.conftest import StartGateway
from tests.gateway.grpc.test_mesh_servicer import failure, mesh_stub, request
from toolmesh.config import KeyConfig, hash_key
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.errors import (
    FunctionNotFound,
    IdempotencyMismatch,
    InvalidArguments,
    InvalidRequest,
    JobNotFound,
)
from toolmesh.v1 import invoke_pb2, mesh_pb2, mesh_pb2_grpc


def _as(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


async def _finished(mesh: mesh_pb2_grpc.MeshStub, job_id: str, key: str) -> mesh_pb2.Job:
    end = time.monotonic() + 20
    while True:
        job = await mesh.GetJob(mesh_pb2.GetJobRequest(id=job_id), metadata=_as(key))
        if job.status not in ("queued", "running"):
            return job
        assert time.monotonic() < end, job
        await asyncio.sleep(0.05)


async def test_submit_and_get_a_job_over_grpc(gateway_factory: StartGateway) -> None:
    keys = [KeyConfig(name="a", key_hash=hash_key("ka")), KeyConfig(name="b", key_hash=hash_key("kb"))]
    gateway = await gateway_factory(keys=keys)
    channel, mesh = mesh_stub(gateway)
    async with channel:
        job = await mesh.SubmitJob(
            mesh_pb2.SubmitJobRequest(call=request("add", a=40, b=2)), metadata=_as("ka")
        )
        assert job.status == "queued" and job.id.startswith("job_")
        done = await _finished(mesh, job.id, "ka")
        assert done.status == "succeeded" and done.attempts == 1 and done.finished_at > 0
        assert json.loads(done.result_json)["structured"] == 42
        # The same job over HTTP, for the same key only.
        async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer ka"}) as http:
            assert (await http.get(f"/v1/jobs/{job.id}")).json()["status"] == "succeeded"
        other = await failure(mesh.GetJob(mesh_pb2.GetJobRequest(id=job.id), metadata=_as("kb")))
        assert isinstance(other, JobNotFound)

        failed = await mesh.SubmitJob(mesh_pb2.SubmitJobRequest(call=request("fail")), metadata=_as("ka"))
        done = await _finished(mesh, failed.id, "ka")
        assert (done.status, done.error_code) == ("failed", "function_error")

        # Refused at submit, with the statuses of Invoke.
        cases = [
            (request("nope"), FunctionNotFound),
            (request("add", a="x"), InvalidArguments),
            (invoke_pb2.InvokeRequest(function="add", arguments=b"[1]"), InvalidRequest),
            (invoke_pb2.InvokeRequest(function="add", arguments=b"\xff"), InvalidRequest),
        ]
        for call, expected in cases:
            submit = mesh.SubmitJob(mesh_pb2.SubmitJobRequest(call=call), metadata=_as("ka"))
            assert isinstance(await failure(submit), expected), call
        missing = mesh.SubmitJob(mesh_pb2.SubmitJobRequest(call=request("add", a=1)))
        with_code = await failure(missing)
        assert with_code.code == "unauthenticated"


async def test_jobs_turned_off_are_refused_over_grpc(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(jobs=JobsConfig(enabled=False))
    channel, mesh = mesh_stub(gateway)
    async with channel:
        refused = await failure(mesh.SubmitJob(mesh_pb2.SubmitJobRequest(call=request("add", a=1))))
        assert isinstance(refused, InvalidRequest) and "[jobs] enabled = false" in refused.message
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        # Over HTTP the preference is ignored (RFC 7240 allows it): the call runs at once.
        answer = await http.post(
            "/v1/functions/add/invoke", json={"a": 1}, headers={"Prefer": "respond-async"}
        )
        assert answer.status_code == 200 and answer.json()["structured"] == 2


async def test_a_keyed_submit_over_grpc_is_the_same_job_as_over_http(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(keys=[KeyConfig(name="a", key_hash=hash_key("ka"))])
    channel, mesh = mesh_stub(gateway)
    keyed = (*_as("ka"), ("idempotency-key", "once-1"))
    async with (
        channel,
        httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer ka"}) as http,
    ):
        for _ in range(3):
            job = await mesh.SubmitJob(
                mesh_pb2.SubmitJobRequest(call=request("add", a=1, b=2)), metadata=keyed
            )
            same = await http.post(
                "/v1/jobs",
                json={"function": "add", "arguments": {"a": 1, "b": 2}},
                headers={"Idempotency-Key": "once-1"},
            )
            assert same.json()["id"] == job.id, same.text
        # A repeat that is no JSON object is refused as such, never compared.
        broken = invoke_pb2.InvokeRequest(function="add", arguments=b"\xff")
        malformed = await failure(mesh.SubmitJob(mesh_pb2.SubmitJobRequest(call=broken), metadata=keyed))
        assert isinstance(malformed, InvalidRequest) and not isinstance(malformed, IdempotencyMismatch)
        other = mesh.SubmitJob(mesh_pb2.SubmitJobRequest(call=request("add", a=5)), metadata=keyed)
        refused = await failure(other)
        assert isinstance(refused, IdempotencyMismatch) and job.id in refused.message
        assert len((await http.get("/v1/jobs")).json()["jobs"]) == 1
