"""The baseline for the runtime benchmark: a bare grpc.aio server for `toolmesh.v1.Runtime`.

Its Invoke answers at once with a constant InvokeResponse shaped like a pod's answer to
a no-op call (same fields, same size), so the pod and this server speak the same
messages over the same framing and only the pod's own work differs. It uses the
pod's server options and prints a ready line like the pod's:

    .venv/bin/python bench/bare_server.py [--host 127.0.0.1] [--port 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal

import grpc

from toolmesh.protocol.channel import server_options
from toolmesh.v1 import function_pb2, invoke_pb2, runtime_pb2_grpc

#: What a pod returns for `noop`: no content, a timing and a 32-hex request id (54 bytes).
RESPONSE = invoke_pb2.InvokeResponse(
    timing=invoke_pb2.Timing(queued_ms=0.005, duration_ms=0.08),
    request_id="0" * 32,
)

Context = grpc.aio.ServicerContext[object, object]


class BareRuntime(runtime_pb2_grpc.RuntimeServicer):
    """Answers every call with a constant; does no work at all."""

    async def ListFunctions(
        self, request: function_pb2.ListFunctionsRequest, context: Context
    ) -> function_pb2.ListFunctionsResponse:
        return function_pb2.ListFunctionsResponse()

    async def Invoke(self, request: invoke_pb2.InvokeRequest, context: Context) -> invoke_pb2.InvokeResponse:
        return RESPONSE


async def serve(host: str, port: int) -> None:
    server = grpc.aio.server(options=server_options())
    runtime_pb2_grpc.add_RuntimeServicer_to_server(BareRuntime(), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    print(json.dumps({"event": "ready", "pid": os.getpid(), "grpc_port": bound}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0)


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
