"""One pod of a runtime as the gateway holds it: where it is, its clients, its state and load."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from toolmesh.gateway.pool.launcher import Spawned
from toolmesh.gateway.pool.runtime_client import RuntimeClient
from toolmesh.gateway.pool.socket_client import SocketClient

STARTING, READY, DRAINING, GONE = "starting", "ready", "draining", "gone"
#: Seconds a pod has to answer a metrics request (Prometheus' own scrape timeout is longer).
METRICS_TIMEOUT = 5.0


@dataclass(eq=False)
class Replica:
    """One pod of a runtime."""

    pid: int
    address: str
    #: The Unix socket of the pod's /metrics (for a gateway that will expose pods' metrics).
    metrics_socket: str | None
    client: RuntimeClient
    #: The shorter road for unary calls (a Unix socket), when the runtime uses it.
    socket: SocketClient | None
    started_at: float
    state: str = READY
    inflight: int = 0
    last_used: float = 0.0
    #: Calls it took, and those it answered (with a result or an error of the function's own).
    taken: int = 0
    served: int = 0
    #: Killed for answering no liveness ping (liveness.py).
    frozen: bool = False

    async def fetch_metrics(self) -> bytes | None:
        """The pod's Prometheus exposition, read from its metrics socket; None if it answers none."""
        if self.metrics_socket is None:
            return None
        with contextlib.suppress(OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            async with asyncio.timeout(METRICS_TIMEOUT):
                reader, writer = await asyncio.open_unix_connection(self.metrics_socket)
                try:
                    writer.write(b"GET /metrics HTTP/1.1\r\nHost: pod\r\nConnection: close\r\n\r\n")
                    answer = await reader.read()
                finally:
                    writer.close()
            head, _, body = answer.partition(b"\r\n\r\n")
            if head.startswith(b"HTTP/1.1 200"):
                return body
        return None

    @classmethod
    def of(cls, runtime: str, spawned: Spawned, now: float) -> Replica:
        """The pod a template just started, with its clients."""
        socket = SocketClient(runtime, spawned.socket) if spawned.socket else None
        client = RuntimeClient(runtime, spawned.address)
        return cls(spawned.pid, spawned.address, spawned.metrics_socket, client, socket, now, last_used=now)

    @property
    def pinger(self) -> SocketClient | RuntimeClient:
        return self.socket or self.client

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
        await self.client.close()
