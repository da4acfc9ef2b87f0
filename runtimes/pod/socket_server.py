"""A pod's end of the socket protocol (toolmesh/protocol/frames.py): runs INVOKE frames on
the executor and writes the answers back."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable

from toolmesh.error_shapes import pod_error
from toolmesh.errors import ToolmeshError
from toolmesh.protocol import wire
from toolmesh.protocol.frames import (
    CANCEL,
    ERROR,
    EVENT,
    INVOKE,
    INVOKE_TRACED,
    PING,
    PONG,
    RESULT,
    FrameReader,
    frame,
    split_traced,
)
from toolmesh.runtimes.functions.call_events import CallEvent
from toolmesh.runtimes.pod.executor import Executor
from toolmesh.tracing import Trace
from toolmesh.v1 import invoke_pb2


class PodConnection(FrameReader):
    """The pod's end of one gateway connection: runs INVOKE frames on the executor."""

    def __init__(self, executor: Executor, closed: Callable[[PodConnection], None]) -> None:
        super().__init__()
        self._executor = executor
        self._closed = closed
        self._calls: dict[int, asyncio.Task[None]] = {}
        #: Request ids of calls whose answers may not have left the pod yet: kept for the end of
        #: the loop step, or written while the socket's buffer was full (the loop watchdog counts
        #: them as started).
        self.unsent: list[str] = []

    def on_frame(self, kind: int, call_id: int, timeout: float, payload: bytes) -> None:
        if kind in (INVOKE, INVOKE_TRACED):
            task = asyncio.ensure_future(self._invoke(call_id, timeout, payload, kind == INVOKE_TRACED))
            self._calls[call_id] = task
            task.add_done_callback(lambda _: self._calls.pop(call_id, None))
        elif kind == CANCEL:
            running = self._calls.get(call_id)
            if running is not None:
                running.cancel()
        elif kind == PING:
            self.send(frame(PONG, call_id))

    async def _invoke(self, call_id: int, timeout: float, payload: bytes, traced: bool) -> None:
        trace: Trace = ()
        if traced:
            trace, payload = split_traced(payload)
        request = invoke_pb2.InvokeRequest.FromString(payload)
        wanted = request.log_level > 0 or request.progress
        deliver = functools.partial(self._send_event, call_id) if wanted else None
        call = wire.call_from_proto(request, timeout or None, deliver)
        call.trace = trace
        try:
            result = await self._executor.invoke(call)
        except ToolmeshError as error:
            self._answer(call.request_id, frame(ERROR, call_id, pod_error(error)))
            return
        self._answer(
            call.request_id, frame(RESULT, call_id, wire.result_to_proto(result).SerializeToString())
        )

    def _answer(self, request_id: str, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.send(data)
            self.unsent.append(request_id)

    def flushed(self) -> None:
        if self.unsent and self.transport is not None and not self.transport.get_write_buffer_size():
            self.unsent.clear()  # the buffer is empty: every answer written so far left

    def _send_event(self, call_id: int, event: CallEvent) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.send(frame(EVENT, call_id, wire.event_to_proto(event).SerializeToString()))

    def close(self) -> None:
        """Stop the calls still running (the drain is over) and hang up."""
        for task in list(self._calls.values()):
            task.cancel()
        if self.transport is not None:
            self.flush()
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        # The gateway went away: nobody will read these answers.
        for task in list(self._calls.values()):
            task.cancel()
        self._closed(self)


class SocketServer:
    """A pod's socket for the gateway; `close` ends its connections and any calls still running."""

    def __init__(self, executor: Executor, path: str) -> None:
        self._executor = executor
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[PodConnection] = set()

    def _connection(self) -> PodConnection:
        connection = PodConnection(self._executor, self._connections.discard)
        self._connections.add(connection)
        return connection

    def unsent(self) -> list[str]:
        """Request ids of calls whose answers may still be in a connection's buffer."""
        return [request_id for connection in list(self._connections) for request_id in connection.unsent]

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._server = await asyncio.get_running_loop().create_unix_server(self._connection, self.path)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
