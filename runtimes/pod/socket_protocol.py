"""Unary calls from the gateway to the pods it runs, over a Unix socket.

Every pod serves the full gRPC `Runtime` service. For the pods it forks itself
the gateway also has this shorter road for `Invoke`: the same protobuf messages
in a five-field frame on a Unix socket, read and written by the event loop. On
this project's machines a grpc.aio client and server add about 300 µs per hop
(the completion-queue poller thread wakes the loop twice per call); this path
costs about 50 µs (bench/RESULTS.md). Streams, listings, health and everyone
else's calls stay on gRPC.

A frame is a header, `>IBQd` (payload length, kind, call id, seconds the caller
will wait or 0), then the payload:

    INVOKE   gateway -> pod   an InvokeRequest
    INVOKE_TRACED  gateway -> pod   the same, after the trace context of the gateway's span in
                                    ids, `>QQQBH` (trace id's high and low 64 bits, span id,
                                    trace flags, tracestate's length), then the tracestate
                                    (ASCII, usually none)
    CANCEL   gateway -> pod   (empty) the caller gave up on that call
    RESULT   pod -> gateway   an InvokeResponse
    ERROR    pod -> gateway   JSON {code, message, extra}: the call was turned away or ran out of time
    EVENT    pod -> gateway   a CallEvent (a log record, a progress report) of a call still running,
                              only when its InvokeRequest asked for them; any number, before its
                              RESULT or ERROR (the connection keeps their order)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import struct
from collections.abc import Callable
from typing import cast

from toolmesh.error_shapes import pod_error
from toolmesh.errors import ToolmeshError
from toolmesh.runtimes.functions.call_events import CallEvent
from toolmesh.runtimes.pod import wire
from toolmesh.runtimes.pod.defaults import WIRE_LIMIT_BYTES
from toolmesh.runtimes.pod.executor import Executor
from toolmesh.tracing import Parent, Trace
from toolmesh.tracing.w3c import SAMPLED, new_parent, parse
from toolmesh.v1 import invoke_pb2

HEADER = struct.Struct(">IBQd")
INVOKE, CANCEL, RESULT, ERROR = 1, 2, 3, 4
#: A liveness check: the pod's event loop answers PING with PONG (same id), so a pod that
#: does not answer is frozen or has its loop blocked (gateway/pool/liveness.py).
PING, PONG = 5, 6
#: An INVOKE with the trace context of the gateway's span in front (when tracing is on), in ids:
#: the gateway has them as ints, and the pod takes them with one unpack instead of reading hex.
INVOKE_TRACED = 7
TRACE_IDS = struct.Struct(">QQQBH")
#: INVOKE_TRACED's header and trace ids, written with one pack.
TRACED_HEADER = struct.Struct(HEADER.format + TRACE_IDS.format[1:])
_LOW_64 = (1 << 64) - 1
#: A log record or progress report of a running call (pod -> gateway).
EVENT = 8
#: Largest payload accepted, as for gRPC messages. A frame over it ends the connection and so
#: every call on it: the executor keeps results under max_result_bytes, well below this.
MAX_PAYLOAD = WIRE_LIMIT_BYTES


def frame(kind: int, call_id: int, payload: bytes = b"", timeout: float = 0.0) -> bytes:
    return HEADER.pack(len(payload), kind, call_id, timeout) + payload


def invoke_frame(call_id: int, request: bytes, timeout: float, trace: Trace) -> bytes:
    """An INVOKE frame, or an INVOKE_TRACED one when the call carries a trace context (W3C pairs
    are read into ids; malformed ones trace nothing, as a span given them starts a new trace)."""
    if type(trace) is Parent:
        ids: Parent | None = trace
    else:
        ids = parse(trace) if trace else None  # type: ignore[arg-type]
    if ids is None:
        return frame(INVOKE, call_id, request, timeout)
    trace_id, span_id, sampled, state = ids
    encoded = state.encode("ascii", "replace") if state else b""
    header = TRACED_HEADER.pack(
        TRACE_IDS.size + len(encoded) + len(request),
        INVOKE_TRACED,
        call_id,
        timeout,
        trace_id >> 64,
        trace_id & _LOW_64,
        span_id,
        SAMPLED if sampled else 0,
        len(encoded),
    )
    return header + encoded + request


def split_traced(payload: bytes) -> tuple[Parent, bytes]:
    """An INVOKE_TRACED payload's trace context and request."""
    high, low, span_id, flags, length = TRACE_IDS.unpack_from(payload)
    end = TRACE_IDS.size + length
    state = payload[TRACE_IDS.size : end].decode("ascii", "replace") if length else ""
    return new_parent((high << 64 | low, span_id, bool(flags & SAMPLED), state)), payload[end:]


class FrameReader(asyncio.Protocol):
    """Splits a byte stream into frames and hands each to `on_frame(kind, call_id, timeout, payload)`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= HEADER.size:
            length, kind, call_id, timeout = HEADER.unpack_from(buffer)
            if length > MAX_PAYLOAD:
                assert self.transport is not None
                self.transport.abort()
                return
            end = HEADER.size + length
            if len(buffer) < end:
                return
            payload = bytes(buffer[HEADER.size : end])
            del buffer[:end]
            self.on_frame(kind, call_id, timeout, payload)

    def on_frame(self, kind: int, call_id: int, timeout: float, payload: bytes) -> None:
        raise NotImplementedError


class PodConnection(FrameReader):
    """The pod's end of one gateway connection: runs INVOKE frames on the executor."""

    def __init__(self, executor: Executor, closed: Callable[[PodConnection], None]) -> None:
        super().__init__()
        self._executor = executor
        self._closed = closed
        self._calls: dict[int, asyncio.Task[None]] = {}
        #: Request ids of calls answered while the socket's buffer was full: their answers may
        #: not have left the pod yet (the loop watchdog counts them as started).
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
            self._send(frame(PONG, call_id))

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
        self._send(data)
        if self.transport is not None and self.transport.get_write_buffer_size():
            self.unsent.append(request_id)
        elif self.unsent:
            self.unsent.clear()  # the buffer is empty: every answer before this one left

    def _send_event(self, call_id: int, event: CallEvent) -> None:
        self._send(frame(EVENT, call_id, wire.event_to_proto(event).SerializeToString()))

    def _send(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        """Stop the calls still running (the drain is over) and hang up."""
        for task in list(self._calls.values()):
            task.cancel()
        if self.transport is not None:
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
