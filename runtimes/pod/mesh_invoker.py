"""ctx.invoke across the mesh: calls for functions a pod does not host go to the gateway."""

from __future__ import annotations

import time

import grpc

from toolmesh.error_shapes import from_rpc_error
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.pod import wire
from toolmesh.runtimes.pod.executor import Call
from toolmesh.v1 import mesh_pb2_grpc


class MeshInvoker:
    """Calls the gateway's `Mesh.Invoke` with the mesh's internal token.

    The channel is created on first use, inside the pod's event loop."""

    def __init__(self, address: str, token: str) -> None:
        self.address = address
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._channel: grpc.aio.Channel | None = None
        self._stub: mesh_pb2_grpc.MeshAsyncStub | None = None

    async def invoke(self, call: Call) -> Result:
        if self._stub is None:
            channel = grpc.aio.insecure_channel(self.address)
            self._channel, self._stub = channel, mesh_pb2_grpc.MeshStub(channel)
        timeout = None if call.deadline is None else max(call.deadline - time.monotonic(), 0.001)
        try:
            reply = await self._stub.Invoke(
                wire.call_to_proto(call), timeout=timeout, metadata=(*self._metadata, *call.trace)
            )
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the mesh at {self.address}") from None
        return wire.result_from_proto(reply)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(grace=None)
