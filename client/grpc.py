"""A client for the gateway's native gRPC `toolmesh.v1.Mesh` service, on grpc.aio.

    async with toolmesh.GrpcClient("127.0.0.1:50051", api_key="...") as mesh:
        result = await mesh.invoke("add", {"a": 1, "b": 2})
        async for event in mesh.stream("stream_text", {"text": "hello"}):
            ...

It speaks the core types (`FunctionSpec`, `Result`, content items) through
`toolmesh.runtimes.pod.wire`, so protobuf messages never reach its callers. A failed
call raises the exact toolmesh error the gateway sent (`from_rpc_error` reads it
from the trailing metadata); a function that raised is a Result with ``is_error``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any, Self

import grpc

from toolmesh.error_shapes import from_rpc_error
from toolmesh.errors import InvalidRequest
from toolmesh.gateway.pool.runtime_client import CHANNEL_OPTIONS
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec
from toolmesh.runtimes.pod import wire
from toolmesh.v1 import function_pb2, invoke_pb2, mesh_pb2_grpc


class GrpcClient:
    """An asyncio client for the gateway's gRPC Mesh service at `address` ("host:port").

    `api_key` is sent as ``authorization: Bearer <key>`` metadata on every call. The
    channel connects lazily; use ``async with``, or call `close()`.
    """

    def __init__(self, address: str, api_key: str | None = None) -> None:
        self.address = address
        self._channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._stub = mesh_pb2_grpc.MeshStub(self._channel)
        self._metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {api_key}"),) if api_key else ()
        )

    async def list_functions(
        self, namespace: str = "", *, timeout: float | None = None
    ) -> list[FunctionSpec]:
        """Every function the key may call; only those in `namespace` when given.

        Each spec's `runtime` names the runtime that hosts it.
        """
        request = function_pb2.ListFunctionsRequest(namespace=namespace)
        try:
            reply = await self._stub.ListFunctions(request, metadata=self._metadata, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the gateway at {self.address}") from None
        return [wire.spec_from_proto(message) for message in reply.functions]

    async def invoke(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Result:
        """Call a function and wait for its result.

        `metadata` reaches the function through its context; `timeout` (seconds) is the
        call's gRPC deadline, and running past it raises FunctionTimeout. A function that
        raised is a Result with ``is_error``; arguments that break its schema raise
        InvalidArguments.
        """
        request = _request(name, arguments, request_id, session_id, metadata)
        try:
            reply = await self._stub.Invoke(request, metadata=self._metadata, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the gateway at {self.address}") from None
        return wire.result_from_proto(reply)

    async def stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> AsyncGenerator[Content | Result, None]:
        """Call a function and yield its content items as it produces them, then its Result.

        The final Result carries the outcome, structured output and timing, but not the
        items, which came before it (an error result's content explains the error).
        Closing the generator early (leaving an ``async with contextlib.aclosing(...)``
        block, say) cancels the call.
        """
        request = _request(name, arguments, request_id, session_id, metadata)
        call = self._stub.InvokeStream(request, metadata=self._metadata, timeout=timeout)
        try:
            async for event in call:
                if event.WhichOneof("event") == "content":
                    yield wire.content_from_proto(event.content)
                else:
                    yield wire.result_from_proto(event.result)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the gateway at {self.address}") from None
        finally:
            call.cancel()  # a no-op once the call is done; stops the function when the caller leaves early

    async def close(self) -> None:
        """Close the channel; calls still running are cancelled."""
        await self._channel.close(None)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _request(
    name: str,
    arguments: Mapping[str, Any] | None,
    request_id: str | None,
    session_id: str | None,
    metadata: Mapping[str, str] | None,
) -> invoke_pb2.InvokeRequest:
    try:
        payload = json.dumps(dict(arguments or {}), separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"arguments cannot be sent as JSON: {exc}", param="arguments") from None
    return invoke_pb2.InvokeRequest(
        function=name,
        arguments=payload,
        request_id=request_id or "",
        session_id=session_id or "",
        metadata=dict(metadata or {}),
    )
