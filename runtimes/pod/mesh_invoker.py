"""ctx.invoke across the mesh: calls for functions a pod does not host go to the gateway; and
ctx.resource_updated, which the gateway passes on to MCP subscribers; and ctx.state's
operations, which the gateway keeps (gateway/state/function_state.py)."""

from __future__ import annotations

import time

import grpc

import toolmesh.tracing as tracing
from toolmesh.error_shapes import from_rpc_error
from toolmesh.protocol import wire
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.durable_state import StateAnswer, StateOp
from toolmesh.runtimes.functions.results import Result
from toolmesh.v1 import mesh_pb2, mesh_pb2_grpc

#: Seconds a resource update may take to reach the gateway.
UPDATE_TIMEOUT = 10.0
#: Seconds one ctx.state operation may take (the gateway's own store timeout is shorter).
STATE_TIMEOUT = 10.0
#: ctx.state's operations by name, as the wire numbers them.
_STATE_OPS = {
    "get": mesh_pb2.StateRequest.GET,
    "set": mesh_pb2.StateRequest.SET,
    "incr": mesh_pb2.StateRequest.INCR,
    "delete": mesh_pb2.StateRequest.DELETE,
    "set_if_version": mesh_pb2.StateRequest.SET_IF_VERSION,
    "keys": mesh_pb2.StateRequest.KEYS,
}


class MeshInvoker:
    """Calls the gateway's `Mesh.Invoke` with the mesh's internal token.

    The channel is created on first use, inside the pod's event loop."""

    def __init__(self, address: str, token: str) -> None:
        self.address = address
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._channel: grpc.aio.Channel | None = None
        self._stub: mesh_pb2_grpc.MeshAsyncStub | None = None

    def _mesh(self) -> mesh_pb2_grpc.MeshAsyncStub:
        if self._stub is None:
            channel = grpc.aio.insecure_channel(self.address)
            self._channel, self._stub = channel, mesh_pb2_grpc.MeshStub(channel)
        return self._stub

    async def invoke(self, call: Call) -> Result:
        stub = self._mesh()
        timeout = None if call.deadline is None else max(call.deadline - time.monotonic(), 0.001)
        try:
            reply = await stub.Invoke(
                wire.call_to_proto(call),
                timeout=timeout,
                metadata=(*self._metadata, *tracing.as_carrier(call.trace)),
            )
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the mesh at {self.address}") from None
        return wire.result_from_proto(reply)

    async def resource_updated(self, uri: str) -> None:
        """`Mesh.ResourceUpdated`: MCP clients subscribed to `uri` hear that it changed."""
        try:
            await self._mesh().ResourceUpdated(
                mesh_pb2.ResourceUpdatedRequest(uri=uri), timeout=UPDATE_TIMEOUT, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the mesh at {self.address}") from None

    async def state(self, op: StateOp) -> StateAnswer:
        """`Mesh.State`: one ctx.state operation on this pod's runtime's keys."""
        request = mesh_pb2.StateRequest(
            op=_STATE_OPS[op.op],
            key=op.key,
            value_json=op.value_json,
            ttl=op.ttl,
            version=op.version,
            prefix=op.prefix,
        )
        try:
            reply = await self._mesh().State(request, timeout=STATE_TIMEOUT, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the mesh at {self.address}") from None
        return StateAnswer(reply.found, reply.value_json, reply.version, tuple(reply.keys))

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(grace=None)
