"""The gateway's end of a pod's Unix socket: unary calls, many at once on one connection.

See toolmesh/protocol/frames.py for why this road exists and its frames.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from toolmesh.error_shapes import from_pod_error
from toolmesh.errors import FunctionTimeout, Unavailable
from toolmesh.gateway.pool.runtime_client import PodUnreachable
from toolmesh.protocol import wire
from toolmesh.protocol.calls import REFUSED, Call
from toolmesh.protocol.frames import CANCEL, ERROR, EVENT, PING, RESULT, FrameReader, frame, invoke_frame
from toolmesh.runtimes.functions.call_events import CallEvent
from toolmesh.runtimes.functions.results import Result
from toolmesh.v1 import invoke_pb2

#: How long past the call's own time limit the gateway waits for the pod's answer: the
#: pod enforces the limit itself and says so, which is the clearer error.
ANSWER_SLACK = 1.0


class _Expired(Exception):
    """A call's answer did not come by its deadline (set on its future by the timer)."""


def _expire(answer: asyncio.Future[tuple[int, bytes]]) -> None:
    if not answer.done():
        answer.set_exception(_Expired())


class _Connection(FrameReader):
    def __init__(self, runtime: str) -> None:
        super().__init__()
        self.runtime = runtime
        self.waiting: dict[int, asyncio.Future[tuple[int, bytes]]] = {}
        #: Where the events of the calls that asked for them go, by call id.
        self.listeners: dict[int, Callable[[CallEvent], None]] = {}
        self.lost = False

    def on_frame(self, kind: int, call_id: int, timeout: float, payload: bytes) -> None:
        if kind == EVENT:
            listener = self.listeners.get(call_id)
            if listener is not None:
                listener(wire.event_from_proto(invoke_pb2.CallEvent.FromString(payload)))
            return
        waiter = self.waiting.pop(call_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result((kind, payload))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        for waiter in self.waiting.values():
            if not waiter.done():
                waiter.set_exception(
                    PodUnreachable(
                        f"lost the connection to a pod of runtime {self.runtime!r}", retry_after=1.0
                    )
                )
        self.waiting.clear()


class SocketClient:
    """Calls one pod over its Unix socket; connects on first use and again after a loss."""

    def __init__(self, runtime: str, path: str) -> None:
        self.runtime = runtime
        self.path = path
        self._connection: _Connection | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()
        self._ids = itertools.count(1)

    async def _connect(self) -> _Connection:
        connection = self._connection
        if connection is not None and not connection.lost:
            return connection
        async with self._connecting:
            if self._connection is None or self._connection.lost:
                loop = asyncio.get_running_loop()
                try:
                    _, protocol = await loop.create_unix_connection(
                        lambda: _Connection(self.runtime), self.path
                    )
                except OSError as exc:
                    # Nothing was sent: the call may go to another pod, idempotent or not.
                    raise PodUnreachable(
                        f"cannot reach a pod of runtime {self.runtime!r}: {exc.strerror}",
                        retry_after=1.0,
                        details={REFUSED: True},
                    ) from None
                self._connection = protocol
            return self._connection

    async def invoke(self, call: Call, timeout: float) -> Result:
        connection = self._connection
        if connection is None or connection.lost:
            connection = await self._connect()
        call_id = next(self._ids)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[int, bytes]] = loop.create_future()
        connection.waiting[call_id] = answer
        if call.events is not None:
            connection.listeners[call_id] = call.events.deliver
        request = wire.call_to_proto(call).SerializeToString()
        connection.send(invoke_frame(call_id, request, timeout, call.trace))
        # One timer handle, not `asyncio.wait_for`'s wrapping per call.
        timer = loop.call_at(loop.time() + timeout + ANSWER_SLACK, _expire, answer)
        try:
            kind, payload = await answer
        except (_Expired, asyncio.CancelledError) as exc:
            connection.waiting.pop(call_id, None)
            if not connection.lost:
                connection.send(frame(CANCEL, call_id))
            if isinstance(exc, _Expired):
                raise FunctionTimeout(f"a pod of runtime {self.runtime!r} did not answer in time") from None
            raise
        finally:
            timer.cancel()
            if call.events is not None:
                connection.listeners.pop(call_id, None)
        if kind == RESULT:
            return wire.result_from_proto(invoke_pb2.InvokeResponse.FromString(payload))
        if kind == ERROR:
            raise from_pod_error(payload)
        raise Unavailable(f"a pod of runtime {self.runtime!r} sent an unknown frame ({kind})")

    async def ping(self, timeout: float) -> bool:
        """Whether the pod's event loop answers within `timeout` seconds."""
        try:
            connection = await asyncio.wait_for(self._connect(), timeout)
        except (TimeoutError, Unavailable):
            return False
        ping_id = next(self._ids)
        answer: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        connection.waiting[ping_id] = answer
        connection.send(frame(PING, ping_id))
        try:
            await asyncio.wait_for(answer, timeout)
        except (TimeoutError, Unavailable):
            connection.waiting.pop(ping_id, None)
            return False
        return True

    async def close(self) -> None:
        if self._connection is not None and self._connection.transport is not None:
            self._connection.flush()
            self._connection.transport.close()
