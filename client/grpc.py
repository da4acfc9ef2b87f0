"""A client for the gateway's native gRPC `toolmesh.v1.Mesh` service, on grpc.aio.

    async with toolmesh.GrpcClient("127.0.0.1:50051", api_key="...") as mesh:
        result = await mesh.invoke("add", {"a": 1, "b": 2})
        async for event in mesh.stream("stream_text", {"text": "hello"}):
            ...

It speaks the core types (`FunctionSpec`, `Result`, content items) through
`toolmesh.protocol.wire`, so protobuf messages never reach its callers. A failed
call raises the exact toolmesh error the gateway sent (`from_rpc_error` reads it
from the trailing metadata); a function that raised is a Result with ``is_error``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any, Self

import grpc

from toolmesh.client.retrying import RetryPolicy
from toolmesh.error_shapes import from_rpc_error
from toolmesh.errors import FunctionNotFound, InvalidRequest
from toolmesh.protocol import wire
from toolmesh.protocol.channel import CHANNEL_OPTIONS
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec
from toolmesh.v1 import function_pb2, invoke_pb2, mesh_pb2, mesh_pb2_grpc


class GrpcClient:
    """An asyncio client for the gateway's gRPC Mesh service at `address` ("host:port").

    `api_key` is sent as ``authorization: Bearer <key>`` metadata on every call. `retries`:
    how many more times `invoke` sends a call that failed in a way that may pass, under one
    `idempotency-key` so that it runs at most once (see retrying.py). The channel connects
    lazily; use ``async with``, or call `close()`.
    """

    def __init__(self, address: str, api_key: str | None = None, retries: int = 0) -> None:
        self.address = address
        self.retry = RetryPolicy(retries)
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
        idempotency_key: str | None = None,
    ) -> Result:
        """Call a function and wait for its result.

        `metadata` reaches the function through its context; `timeout` (seconds) is the
        call's gRPC deadline (each attempt's), and running past it raises FunctionTimeout. A
        function that raised is a Result with ``is_error``; arguments that break its schema
        raise InvalidArguments. With an `idempotency_key` (or `retries`, which makes one) a
        repeat answers the first outcome.
        """
        request = _request(name, arguments, request_id, session_id, metadata)
        key = self.retry.key(idempotency_key)
        sent = self._metadata + ((("idempotency-key", key),) if key else ())
        for attempt in itertools.count(1):
            try:
                reply = await self._stub.Invoke(request, metadata=sent, timeout=timeout)
            except grpc.aio.AioRpcError as exc:
                error = from_rpc_error(exc, f"the gateway at {self.address}")
                pause = self.retry.pause(error, attempt)
                if pause is None:
                    raise error from None
                await asyncio.sleep(pause)
            else:
                return wire.result_from_proto(reply)
        raise AssertionError("unreachable")

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

    async def get_function(self, name: str, *, timeout: float | None = None) -> FunctionSpec:
        """One function the key may call, by its qualified name; FunctionNotFound otherwise."""
        for spec in await self.list_functions(timeout=timeout):
            if spec.qualified_name == name:
                return spec
        raise FunctionNotFound(f"no function named {name!r}")

    async def route(
        self,
        prompt: str,
        k: int | None = None,
        session_id: str | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The function that fits a free-text prompt (``match``, or None) and the candidates, as
        `Client.route` answers them."""
        request = mesh_pb2.RouteRequest(prompt=prompt, k=k or 0, session_id=session_id or "")
        try:
            reply = await self._stub.Route(request, metadata=self._metadata, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the gateway at {self.address}") from None
        return {
            "match": reply.match or None,
            "routing_id": reply.routing_id,
            "candidates": [_candidate(c) for c in reply.candidates],
        }

    async def execute(
        self,
        prompt: str,
        session_id: str | None = None,
        dry_run: bool = False,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Route a prompt and run the call if free text may run it at once, as `Client.execute`:
        any other call comes back with status "needs_confirmation"; `confirm` runs it."""
        request = mesh_pb2.ExecuteRequest(prompt=prompt, session_id=session_id or "", dry_run=dry_run)
        return await self._execute(request, timeout)

    async def confirm(self, token: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Run the planned call an `execute` answer's confirmation token stands for, once."""
        return await self._execute(mesh_pb2.ExecuteRequest(confirm=token), timeout)

    async def _execute(self, request: mesh_pb2.ExecuteRequest, timeout: float | None) -> dict[str, Any]:
        try:
            reply = await self._stub.Execute(request, metadata=self._metadata, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc, f"the gateway at {self.address}") from None
        confirmation = None
        if reply.HasField("confirmation"):
            held = reply.confirmation
            confirmation = {
                "reason": held.reason,
                "destructive": held.destructive,
                "carried": list(held.carried),
                **({"token": held.token, "expires_in": held.expires_in} if held.token else {}),
            }
        return {
            "status": reply.status,
            "function": reply.function,
            "arguments": json.loads(reply.arguments_json or b"{}"),
            "argument_sources": dict(reply.argument_sources),
            "result": json.loads(reply.result_json) if reply.result_json else None,
            "follow_up": reply.follow_up,
            "routing_id": reply.routing_id,
            "candidates": [_candidate(c) for c in reply.candidates],
            "confirmation": confirmation,
            "session_id": reply.session_id or None,
        }

    async def close(self) -> None:
        """Close the channel; calls still running are cancelled."""
        await self._channel.close(None)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _candidate(candidate: mesh_pb2.RouteCandidate) -> dict[str, Any]:
    return {
        "name": candidate.name,
        "score": round(candidate.score, 4),
        "scores": {"dense": round(candidate.dense, 4), "lexical": round(candidate.lexical, 4)},
    }


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
