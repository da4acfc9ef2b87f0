"""The three stores of keyed calls, side by side: two replicas (two store objects on one SQLite
file or one redis-server) racing for the same keys never both claim one, and a lapsed claim is
taken over only when asked (an idempotent function) and only for the same call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.gateway.state.conftest import RedisServer
from toolmesh.gateway.idempotency.local_outcomes import LocalOutcomes
from toolmesh.gateway.idempotency.outcome_store import Claim, KeyState, OutcomeStore
from toolmesh.gateway.idempotency.redis_outcomes import RedisOutcomes
from toolmesh.gateway.idempotency.sqlite_outcomes import SqliteOutcomes
from toolmesh.gateway.state.redis_client import Outage, connect


@pytest.fixture(params=["local", "sqlite", "redis"])
async def replicas(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[OutcomeStore, OutcomeStore]]:
    """Two stores that see the same records, as two gateway replicas do."""
    if request.param == "local":
        shared = LocalOutcomes()
        yield shared, shared
        return
    if request.param == "sqlite":
        stores = [SqliteOutcomes(tmp_path / "idempotency.sqlite3") for _ in range(2)]
        for store in stores:
            await store.open()
        yield stores[0], stores[1]
        for store in stores:
            await store.aclose()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    clients = [connect(server.url, 1.0) for _ in range(2)]
    yield (
        RedisOutcomes(clients[0], "t:", Outage(server.url)),
        RedisOutcomes(clients[1], "t:", Outage(server.url)),
    )
    for client in clients:
        await client.aclose()


async def test_racing_replicas_never_both_claim_a_key(replicas: tuple[OutcomeStore, OutcomeStore]) -> None:
    for round_ in range(20):
        record = f"race-{round_}"
        bids = [
            replicas[i % 2].claim(record, Claim("fp", f"replica-{i}", lease=5, ttl=60)) for i in range(10)
        ]
        answers = await asyncio.gather(*bids)
        winners = [i for i, found in enumerate(answers) if found is None]
        assert len(winners) == 1, f"round {round_}: {winners} all claimed the key"
        owner = f"replica-{winners[0]}"
        assert {found.owner for found in answers if found is not None} == {owner}
        assert all(found.state is KeyState.RUNNING and not found.lapsed for found in answers if found)


async def test_a_finished_call_is_answered_and_a_lapsed_one_taken_over_only_when_asked(
    replicas: tuple[OutcomeStore, OutcomeStore],
) -> None:
    first, second = replicas
    assert await first.claim("done", Claim("fp", "a", 5, 60)) is None
    await first.finish("done", "a", KeyState.DONE, b'{"outcome": 1}', 60)
    found = await second.claim("done", Claim("fp", "b", 5, 60, take_lapsed=True))
    assert found is not None and found.state is KeyState.DONE and found.outcome == b'{"outcome": 1}'

    assert await first.claim("lapsing", Claim("fp", "a", 0.1, 60)) is None
    await asyncio.sleep(0.2)
    found = await second.claim("lapsing", Claim("fp", "b", 5, 60))
    assert found is not None and found.lapsed and found.owner == "a"
    other_call = await second.claim("lapsing", Claim("other", "b", 5, 60, take_lapsed=True))
    assert other_call is not None and other_call.fingerprint == "fp"
    assert await second.claim("lapsing", Claim("fp", "b", 5, 60, take_lapsed=True)) is None
    # The replica that lost it can no longer renew or record it.
    assert not await first.renew("lapsing", "a", 5)
    await first.finish("lapsing", "a", KeyState.DONE, b"late", 60)
    assert await second.renew("lapsing", "b", 5)
    found = await first.claim("lapsing", Claim("fp", "a", 5, 60))
    assert found is not None and found.owner == "b" and found.state is KeyState.RUNNING

    # A released claim (its call ran nothing) frees the key; another owner cannot release it.
    assert await first.claim("freed", Claim("fp", "a", 5, 60)) is None
    await second.release("freed", "b")
    assert await second.claim("freed", Claim("fp", "b", 5, 60)) is not None
    await first.release("freed", "a")
    assert await second.claim("freed", Claim("fp", "b", 5, 60)) is None


async def test_a_record_expires_with_its_ttl(replicas: tuple[OutcomeStore, OutcomeStore]) -> None:
    first, second = replicas
    assert await first.claim("short", Claim("fp", "a", 5, 0.2)) is None
    await first.finish("short", "a", KeyState.DONE, b"{}", 0.2)
    assert await second.claim("short", Claim("fp", "b", 5, 60)) is not None
    await asyncio.sleep(0.3)
    assert await second.claim("short", Claim("fp", "b", 5, 60)) is None
