"""The gRPC baseline of bench/cpu_per_call.py: a bare grpc.aio `toolmesh.v1.Mesh` servicer.

Its unary Invoke answers at once with the InvokeResponse the gateway gives for a no-op call,
on the gateway's public server options, so the difference to the gateway's Mesh/Invoke is
the gateway's own work. Prints a ready line like the gateway's:

    .venv/bin/python bench/plain_grpc.py [--port 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal

import grpc
import uvloop

from toolmesh.gateway.grpc.server_limits import public_server_options
from toolmesh.v1 import invoke_pb2, mesh_pb2_grpc

RESPONSE = invoke_pb2.InvokeResponse(
    timing=invoke_pb2.Timing(queued_ms=0.02, duration_ms=0.05),
    request_id="0" * 32,
)

Context = grpc.aio.ServicerContext[object, object]


class PlainMesh(mesh_pb2_grpc.MeshServicer):
    async def Invoke(self, request: invoke_pb2.InvokeRequest, context: Context) -> invoke_pb2.InvokeResponse:
        return RESPONSE


async def serve(port: int) -> None:
    server = grpc.aio.server(options=public_server_options(1024, 10.0))
    mesh_pb2_grpc.add_MeshServicer_to_server(PlainMesh(), server)  # type: ignore[abstract]
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(json.dumps({"event": "ready", "pid": os.getpid(), "grpc_port": bound}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=0)
    uvloop.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
