"""Bare gRPC servers answering `toolmesh.v1.Mesh/Invoke` with a constant, one way of serving each.

The alternatives bench/grpc_server_ab.py measures side by side (issue #31: is a cheaper gRPC
server than grpc.aio as we run it to be had?). Each answers the InvokeResponse the gateway gives
for a no-op call and prints a ready line like the gateway's:

    .venv/bin/python bench/grpc_variants.py --variant aio [--port 0]

    aio            grpc.aio on uvloop, registered protobuf handlers, the gateway's public options
                   (bench/plain_grpc.py)
    aio-bare       the same without any server option
    aio-bytes      the same as aio, through a generic handler on raw bytes: no protobuf codec
    aio-asyncio    the same as aio on asyncio's own event loop instead of uvloop
    sync           the synchronous grpc.server with a thread pool (16 workers)
    sync-bytes     the same through a generic handler on raw bytes
    grpclib        the pure-Python `grpclib` server (asyncio, on `h2`), on uvloop, protobuf codec
                   (not a project dependency either: pip install --target DIR grpclib)
    h2-task        the h2 server with what each call would need at the least: a task per call
                   (cancelled by RST_STREAM), its metadata and `grpc-timeout` read, the request
                   decoded and the answer encoded with protobuf, `x-request-id` in the trailers
    h2             no grpcio at all: gRPC's unary call over HTTP/2 by hand on the pure-Python `h2`
                   package, on uvloop (a data point only: no deadlines, limits, health, TLS; `h2` is
                   not a project dependency, install it apart: pip install --target DIR h2)

C-core experiments (`GRPC_EXPERIMENTS`) and poll strategies are set by the driver in the
environment, on the `aio` variant; so are further server options, as a JSON list of pairs in
`BENCH_GRPC_OPTIONS` (added to the public ones).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import threading
from concurrent import futures
from typing import Any

import grpc
import uvloop

from toolmesh.gateway.grpc.server_limits import public_server_options
from toolmesh.v1 import invoke_pb2, mesh_pb2_grpc

RESPONSE = invoke_pb2.InvokeResponse(
    timing=invoke_pb2.Timing(queued_ms=0.02, duration_ms=0.05),
    request_id="0" * 32,
)
RESPONSE_BYTES = RESPONSE.SerializeToString()
INVOKE = "/toolmesh.v1.Mesh/Invoke"
VARIANTS = ("aio", "aio-bare", "aio-bytes", "aio-asyncio", "sync", "sync-bytes", "grpclib", "h2", "h2-task")


def _identity(data: bytes) -> bytes:
    return data


class _AioMesh(mesh_pb2_grpc.MeshServicer):
    async def Invoke(self, request: Any, context: Any) -> Any:
        return RESPONSE


class _SyncMesh(mesh_pb2_grpc.MeshServicer):
    def Invoke(self, request: Any, context: Any) -> Any:
        return RESPONSE


async def _constant_bytes(request: bytes, context: Any) -> bytes:
    return RESPONSE_BYTES


def _constant_bytes_sync(request: bytes, context: Any) -> bytes:
    return RESPONSE_BYTES


class _BytesHandler(grpc.GenericRpcHandler):  # type: ignore[type-arg]
    def __init__(self, behaviour: Any) -> None:
        self._handler = grpc.unary_unary_rpc_method_handler(behaviour, _identity, _identity)

    def service(self, handler_call_details: Any) -> Any:
        return self._handler if handler_call_details.method == INVOKE else None


def _ready(port: int) -> None:
    print(json.dumps({"event": "ready", "pid": os.getpid(), "grpc_port": port}), flush=True)


async def _serve_aio(variant: str, port: int) -> None:
    options: list[tuple[str, Any]] = [] if variant == "aio-bare" else [*public_server_options(1024, 10.0)]
    options += [tuple(pair) for pair in json.loads(os.environ.get("BENCH_GRPC_OPTIONS", "[]"))]
    server = grpc.aio.server(options=options)
    if variant == "aio-bytes":
        server.add_generic_rpc_handlers([_BytesHandler(_constant_bytes)])
    else:
        mesh_pb2_grpc.add_MeshServicer_to_server(_AioMesh(), server)  # type: ignore[abstract]
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    _ready(bound)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0)


def _serve_sync(variant: str, port: int) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(16), options=public_server_options(1024, 10.0))
    if variant == "sync-bytes":
        server.add_generic_rpc_handlers([_BytesHandler(_constant_bytes_sync)])
    else:
        mesh_pb2_grpc.add_MeshServicer_to_server(_SyncMesh(), server)  # type: ignore[abstract]
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    _ready(bound)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop(0)


async def _serve_grpclib(port: int) -> None:
    from grpclib.const import Cardinality, Handler  # type: ignore[import-not-found]
    from grpclib.server import Server  # type: ignore[import-not-found]

    class _Mesh:
        async def invoke(self, stream: Any) -> None:
            await stream.recv_message()
            await stream.send_message(RESPONSE)

        def __mapping__(self) -> dict[str, Any]:
            unary = Cardinality.UNARY_UNARY
            request, response = invoke_pb2.InvokeRequest, invoke_pb2.InvokeResponse
            return {INVOKE: Handler(self.invoke, unary, request, response)}

    server = Server([_Mesh()])
    await server.start("127.0.0.1", port)
    _ready(server._server.sockets[0].getsockname()[1])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def _grpc_timeout(value: bytes) -> float:
    units = {b"H": 3600.0, b"M": 60.0, b"S": 1.0, b"m": 1e-3, b"u": 1e-6, b"n": 1e-9}
    return int(value[:-1]) * units[value[-1:]]


async def _serve_h2(port: int, tasks: bool) -> None:
    import h2.config  # type: ignore[import-not-found]
    import h2.connection  # type: ignore[import-not-found]
    import h2.events  # type: ignore[import-not-found]

    config = h2.config.H2Configuration(client_side=False, header_encoding=None)
    framed = b"\x00" + len(RESPONSE_BYTES).to_bytes(4, "big") + RESPONSE_BYTES
    head = [(b":status", b"200"), (b"content-type", b"application/grpc")]
    trailers = [(b"grpc-status", b"0")]

    class _Protocol(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.conn = h2.connection.H2Connection(config=config)
            self.conn.initiate_connection()
            self.streams: dict[int, tuple[dict[bytes, bytes], bytearray]] = {}
            self.calls: dict[int, asyncio.Task[None]] = {}
            transport.write(self.conn.data_to_send())

        async def _call(self, stream_id: int, headers: dict[bytes, bytes], body: bytes) -> None:
            timeout = headers.get(b"grpc-timeout")
            metadata = [(k, v) for k, v in headers.items() if not k.startswith(b":")]
            request = invoke_pb2.InvokeRequest.FromString(body[5:])
            async with asyncio.timeout(_grpc_timeout(timeout) if timeout else None):
                response = await _AioMesh().Invoke(request, metadata)
            data = response.SerializeToString()
            conn = self.conn
            conn.send_headers(stream_id, head)
            conn.send_data(stream_id, b"\x00" + len(data).to_bytes(4, "big") + data)
            request_id = (request.request_id or "0" * 32).encode()
            conn.send_headers(stream_id, [*trailers, (b"x-request-id", request_id)], end_stream=True)
            self.transport.write(conn.data_to_send())
            del self.calls[stream_id]

        def data_received(self, data: bytes) -> None:
            conn = self.conn
            for event in conn.receive_data(data):
                if tasks and isinstance(event, h2.events.RequestReceived):
                    self.streams[event.stream_id] = (dict(event.headers), bytearray())
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if tasks:
                        self.streams[event.stream_id][1].extend(event.data)
                elif tasks and isinstance(event, h2.events.StreamReset):
                    call = self.calls.pop(event.stream_id, None)
                    if call is not None:
                        call.cancel()
                elif tasks and isinstance(event, h2.events.StreamEnded):
                    headers, body = self.streams.pop(event.stream_id)
                    call = asyncio.ensure_future(self._call(event.stream_id, headers, bytes(body)))
                    self.calls[event.stream_id] = call
                elif isinstance(event, h2.events.StreamEnded):
                    # A real server would decode the request here; the constant needs none.
                    conn.send_headers(event.stream_id, head)
                    conn.send_data(event.stream_id, framed)
                    conn.send_headers(event.stream_id, trailers, end_stream=True)
            self.transport.write(conn.data_to_send())

    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Protocol, "127.0.0.1", port)
    _ready(server.sockets[0].getsockname()[1])
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", choices=VARIANTS, default="aio")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.variant.startswith("sync"):
        _serve_sync(args.variant, args.port)
    elif args.variant == "grpclib":
        uvloop.run(_serve_grpclib(args.port))
    elif args.variant == "h2":
        uvloop.run(_serve_h2(args.port, tasks=False))
    elif args.variant == "h2-task":
        uvloop.run(_serve_h2(args.port, tasks=True))
    elif args.variant == "aio-asyncio":
        asyncio.run(_serve_aio(args.variant, args.port))
    else:
        uvloop.run(_serve_aio(args.variant, args.port))


if __name__ == "__main__":
    main()
