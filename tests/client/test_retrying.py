"""The clients' `retries`: every call they may send twice carries one `Idempotency-Key`, so a
retry after a lost answer replays the outcome instead of running the function again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.client.conftest import Driven
from tests.gateway.conftest import StartGateway, gateway_factory, runtime
from tests.gateway.state.conftest import free_port
from toolmesh import AsyncClient, Client, GrpcClient, OutcomeUnknown
from toolmesh.client.retrying import RetryPolicy
from toolmesh.errors import IdempotencyConflict, InvalidRequest, RateLimited, Unavailable

__all__ = ["gateway_factory"]

KEYED = runtime("keyed", "keyed_tools")


def runs(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class DroppingProxy:
    """A TCP proxy in front of the gateway that, for its first `drops` connections, passes the
    request on, reads the whole answer and then closes the client's connection without sending
    it: what a client sees when a gateway dies after its pod ran the call."""

    def __init__(self, port: int, drops: int) -> None:
        self.port = port
        self.drops = drops
        self.seen: list[bytes] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        request = head + await reader.readexactly(length)
        self.seen.append(request)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        up_writer.write(request.replace(b"keep-alive", b"close"))
        await up_writer.drain()
        answer = await up_reader.read()
        up_writer.close()
        if self.drops > 0:
            self.drops -= 1
        else:
            writer.write(answer)
            await writer.drain()
        writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[DroppingProxy]:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        async with self.server:
            yield self


def keys_sent(proxy: DroppingProxy) -> list[str]:
    return [
        line.split(b":", 1)[1].strip().decode()
        for request in proxy.seen
        for line in request.split(b"\r\n")
        if line.lower().startswith(b"idempotency-key")
    ]


@pytest.mark.parametrize("kind", [AsyncClient, Client])
async def test_a_retry_after_a_lost_answer_replays_the_outcome(
    gateway_factory: StartGateway, tmp_path: Path, kind: type[AsyncClient | Client]
) -> None:
    gateway = await gateway_factory(KEYED)
    log = tmp_path / "log"
    for round_ in range(3):
        async with DroppingProxy(gateway.http_port, drops=2).running() as proxy:
            client = kind(proxy.url, timeout=10, retries=3)
            try:
                result = await Driven(client).invoke("append", {"path": str(log), "text": str(round_)})
            finally:
                await asyncio.to_thread(client.close) if isinstance(client, Client) else await client.close()
        assert result.structured == round_ + 1
        keys = keys_sent(proxy)
        assert len(keys) == 3 and len(set(keys)) == 1, "one key for every attempt"
        uuid.UUID(keys[0])
    assert runs(log) == ["0", "1", "2"], "each call ran once"


@pytest.mark.parametrize("kind", [AsyncClient, Client])
async def test_without_retries_a_lost_answer_is_raised_and_no_key_is_sent(
    gateway_factory: StartGateway, tmp_path: Path, kind: type[AsyncClient | Client]
) -> None:
    gateway = await gateway_factory(KEYED)
    log = tmp_path / "log"
    async with DroppingProxy(gateway.http_port, drops=1).running() as proxy:
        client = kind(proxy.url, timeout=10)
        try:
            with pytest.raises(Unavailable):
                await Driven(client).invoke("append", {"path": str(log), "text": "x"})
            # A key of the caller's own is sent as given, and its repeat is answered from the outcome.
            first = await Driven(client).invoke(
                "append", {"path": str(log), "text": "y"}, idempotency_key="mine"
            )
            again = await Driven(client).invoke(
                "append", {"path": str(log), "text": "y"}, idempotency_key="mine"
            )
        finally:
            await asyncio.to_thread(client.close) if isinstance(client, Client) else await client.close()
    assert keys_sent(proxy) == ["mine", "mine"]
    assert first.structured == again.structured == 2
    assert runs(log) == ["x", "y"]


async def test_the_grpc_client_retries_until_the_gateway_is_back_and_runs_the_call_once(
    gateway_factory: StartGateway, tmp_path: Path
) -> None:
    port = free_port()
    log = tmp_path / "log"
    client = GrpcClient(f"127.0.0.1:{port}", retries=8)
    try:
        # Nothing listens yet (a gateway restarting): the client retries until one does.
        calling = asyncio.create_task(client.invoke("append", {"path": str(log), "text": "g"}, timeout=10))
        await asyncio.sleep(0.3)
        gateway = await gateway_factory(KEYED, grpc_port=port)
        assert (await calling).structured == 1
        explicit = [
            await client.invoke("append", {"path": str(log), "text": "h"}, idempotency_key="grpc-key")
            for _ in range(2)
        ]
        assert [r.structured for r in explicit] == [2, 2]
        assert gateway.grpc_port == port
    finally:
        await client.close()
    assert runs(log) == ["g", "h"]


async def test_an_unknown_outcome_is_not_retried(gateway_factory: StartGateway, tmp_path: Path) -> None:
    # The record a replica leaves when it dies mid-call, made here by a claim nobody renews.
    gateway = await gateway_factory(KEYED, idempotency_lease=0.2)
    log = tmp_path / "log"
    arguments = {"path": str(log), "text": "lost"}
    from toolmesh.gateway.core.keyed_calls import fingerprint
    from toolmesh.gateway.idempotency.outcome_store import Claim, record_id

    keyed = gateway.mesh.keyed
    claim = Claim(fingerprint("append", json.dumps(arguments).encode()), "gone-replica", 0.2, 60.0)
    assert await keyed.store.claim(record_id("anonymous", "lost-key"), claim) is None
    await asyncio.sleep(0.3)
    async with AsyncClient(gateway.url, retries=5) as client:
        with pytest.raises(OutcomeUnknown) as unknown:
            await client.invoke("append", arguments, idempotency_key="lost-key")
    assert "gone-replica stopped mid-call" in unknown.value.message
    assert runs(log) == []


def test_the_policy_retries_only_what_may_pass() -> None:
    policy = RetryPolicy(2)
    assert policy.pause(Unavailable("down"), 1) == 0.2
    assert policy.pause(Unavailable("down"), 2) == 0.4
    assert policy.pause(Unavailable("down"), 3) is None, "two retries, then the error"
    assert policy.pause(RateLimited("slow down", retry_after=1.5), 1) == 1.5
    assert policy.pause(IdempotencyConflict("still running", retry_after=1.0), 1) == 1.0
    assert policy.pause(OutcomeUnknown("unknown"), 1) is None
    assert policy.pause(InvalidRequest("bad"), 1) is None
    assert RetryPolicy(0).key(None) is None and RetryPolicy(0).key("k") == "k"
    assert RetryPolicy(1).key(None) != RetryPolicy(1).key(None)
    with pytest.raises(ValueError, match="retries must be 0 or more"):
        RetryPolicy(-1)
