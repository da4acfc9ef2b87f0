"""The socket frames: unary calls from the gateway to the pods it runs, over a Unix socket.

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
    PING     gateway -> pod   (empty) is the pod's event loop running?  PONG: yes (same id)

The pod's end is runtimes/pod/socket_server.py, the gateway's gateway/pool/socket_client.py.
"""

from __future__ import annotations

import asyncio
import struct
from typing import cast

from toolmesh.protocol.defaults import WIRE_LIMIT_BYTES
from toolmesh.tracing import Parent, Trace
from toolmesh.tracing.w3c import SAMPLED, new_parent, parse

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
    """Splits a byte stream into frames and hands each to `on_frame(kind, call_id, timeout, payload)`;
    `send` writes frames, those of one event-loop step with one write.

    Why one write: under concurrent calls many start (or finish) in the same loop step, and
    uvloop sends each `transport.write` at once when nothing is queued: a `send` system call per
    frame, a fifth of the gateway's CPU per call (bench/RESULTS.md). The frames written in a step
    are kept and sent together at the end of that step, in the order written; a lone frame waits
    only for the loop's next turn, never for a timer.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        #: Bytes the frame at the head of `_buffer` needs before it can be read.
        self._wanted = HEADER.size
        self._outgoing: list[bytes] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)
        self._loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        if buffer:
            buffer += data
            if len(buffer) < self._wanted:
                return  # a large frame arriving in pieces: joined once it is whole
            data = bytes(buffer)
            buffer.clear()
        offset, size = 0, len(data)
        while size - offset >= HEADER.size:
            length, kind, call_id, timeout = HEADER.unpack_from(data, offset)
            if length > MAX_PAYLOAD:
                assert self.transport is not None
                self.transport.abort()
                return
            start = offset + HEADER.size
            end = start + length
            if end > size:
                self._wanted = end - offset
                break
            offset = end
            self.on_frame(kind, call_id, timeout, data[start:end])
        else:
            self._wanted = HEADER.size
        if offset < size:
            buffer += data[offset:]

    def on_frame(self, kind: int, call_id: int, timeout: float, payload: bytes) -> None:
        raise NotImplementedError

    def send(self, data: bytes) -> None:
        """Write a frame; it leaves with the others of this loop step, at the step's end."""
        if not self._outgoing:
            assert self._loop is not None
            self._loop.call_soon(self.flush)
        self._outgoing.append(data)

    def flush(self) -> None:
        """Send the frames kept now (dropped if the connection is closing: nobody reads them)."""
        outgoing = self._outgoing
        if not outgoing:
            return
        data = outgoing[0] if len(outgoing) == 1 else b"".join(outgoing)
        outgoing.clear()
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)
            self.flushed()

    def flushed(self) -> None:
        """Called after each write of kept frames (for the pod's record of answers not yet sent)."""
