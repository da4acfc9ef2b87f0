"""Asynchronous calls from the Python HTTP clients: submit, wait, get, list, cancel, retry,
against a real gateway and a real pod (both clients, as in test_http)."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.client.conftest import Connect, raises
from tests.gateway.conftest import runtime
from toolmesh import FunctionNotFound, FunctionTimeout, InvalidArguments, JobNotFound, RemoteJob
from toolmesh.config import GatewayConfig, MeshConfig
from toolmesh.config.jobs_config import JobsConfig
from toolmesh.gateway.server import Gateway, start_gateway

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway() -> AsyncIterator[Gateway]:
    with tempfile.TemporaryDirectory(prefix="tm-") as tmp:
        config = MeshConfig(
            gateway=GatewayConfig(http_port=0, grpc_port=0),
            runtimes=(runtime(),),
            jobs=JobsConfig(path=Path(tmp) / "jobs.sqlite3", workers=1),
        )
        started = await start_gateway(config, environ={})
        yield started
        await started.stop(grace=0)


async def test_a_submitted_call_is_waited_for_and_read_back(connect: Connect, gateway: Gateway) -> None:
    mesh = connect(gateway.url)
    job = await mesh.submit("add", {"a": 40, "b": 2}, request_id="req-jobs-1")
    assert isinstance(job, RemoteJob) and job.function == "add" and job.status in ("queued", "running")
    done = await mesh.wait_job(job.id, timeout=30)
    assert done.status == "succeeded" and done.finished and done.attempts == 1
    assert done.result is not None and done.result.structured == 42
    assert done.document["request_id"] == "req-jobs-1"
    assert (await mesh.get_job(job.id)).result == done.result
    failed = await mesh.wait_job((await mesh.submit("fail", {"message": "no"})).id, timeout=30)
    assert failed.status == "failed" and failed.result is not None and failed.result.is_error
    listed = await mesh.list_jobs(status="succeeded")
    assert job.id in {j.id for j in listed} and failed.id not in {j.id for j in listed}


async def test_a_queued_job_is_cancelled_and_retried(connect: Connect, gateway: Gateway) -> None:
    mesh = connect(gateway.url)
    # One worker: while it runs `block`, the next job stays queued.
    busy = await mesh.submit("block", {"seconds": 2.0})
    queued = await mesh.submit("add", {"a": 1})
    cancelled = await mesh.cancel_job(queued.id)
    assert cancelled.status == "cancelled" and cancelled.finished
    again = await mesh.retry_job(queued.id)
    assert again.status == "queued"
    assert (await mesh.wait_job(again.id, timeout=30)).result.structured == 2  # type: ignore[union-attr]
    await mesh.wait_job(busy.id, timeout=30)


async def test_refusals_raise_the_exact_error(connect: Connect, gateway: Gateway) -> None:
    mesh = connect(gateway.url)
    await raises(FunctionNotFound, mesh.submit("no_such_function"))
    await raises(InvalidArguments, mesh.submit("add", {"a": "forty"}))
    await raises(JobNotFound, mesh.get_job("job-that-is-not-there"))
    slow = await mesh.submit("block", {"seconds": 2.0})
    await raises(FunctionTimeout, mesh.wait_job(slow.id, timeout=0.3, poll=0.05))
    await mesh.wait_job(slow.id, timeout=30)
