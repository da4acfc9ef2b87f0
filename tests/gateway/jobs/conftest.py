"""The job stores' fixtures: each store on the real thing (a SQLite file; the shared-state
tests' redis-server on loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.state.conftest import redis_server
from toolmesh.gateway.jobs.job import CallbackState, Job, new_job_id
from toolmesh.gateway.jobs.job_store import JobStore
from toolmesh.gateway.jobs.redis_jobs import RedisJobStore
from toolmesh.gateway.jobs.sqlite_jobs import SqliteJobStore
from toolmesh.gateway.state.redis_client import Outage, connect

__all__ = ["redis_server"]

OpenStore = Callable[..., Coroutine[Any, Any, JobStore]]
#: The project the stores below belong to, and the functions their gateway serves.
PROJECT = "tests-0123456789ab"
SERVED = frozenset({"add"})


@pytest.fixture(params=["sqlite", "redis"])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OpenStore]:
    """Stores on one file, or one Redis, as the gateways that share it; each its own client
    (`await open_store("other-project")`: a gateway of another project on the same one)."""
    opened: list[JobStore] = []
    clients: list[Any] = []
    url = request.getfixturevalue("redis_server").url if request.param == "redis" else ""

    async def start(project: str = PROJECT) -> JobStore:
        store: JobStore
        if url:
            client = connect(url, 5.0)
            clients.append(client)
            store = RedisJobStore(client, "test:", Outage(url), ttl=3600, max_attempts=5, project=project)
        else:
            store = SqliteJobStore(tmp_path / "jobs" / "jobs.sqlite3", project)
        await store.open()
        opened.append(store)
        return store

    yield start
    for store in opened:
        await store.close()
    for client in clients:
        await client.aclose()


def make_job(
    owner: str = "alice", callback: str | None = None, function: str = "add", *, idempotent: bool = True
) -> Job:
    """A job of `function`, idempotent unless said (then its gateway's death fails it)."""
    return Job(
        new_job_id(),
        owner,
        function,
        b'{"a": 1}',
        callback_url=callback,
        callback_state=CallbackState.PENDING if callback else CallbackState.NONE,
        idempotent=idempotent,
    )
