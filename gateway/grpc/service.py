"""The native gRPC front door: the `toolmesh.v1.Mesh` service, adapting messages to `Mesh`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from toolmesh.config import RouterConfig
from toolmesh.errors import ToolmeshError
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.free_text import parse_route_request, route
from toolmesh.gateway.core.mesh import CallOptions, Mesh, raise_for_call_error
from toolmesh.router.service import RouterService
from toolmesh.runtimes.functions.results import Result
from toolmesh.runtimes.functions.spec import NamespaceSpec
from toolmesh.runtimes.pod import wire
from toolmesh.v1 import function_pb2, invoke_pb2, mesh_pb2, mesh_pb2_grpc

Context = grpc.aio.ServicerContext[object, object]


def _authorization(context: Context) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return value if isinstance(value, str) else value.decode()
    return None


def _options(request: invoke_pb2.InvokeRequest, context: Context) -> CallOptions:
    return CallOptions(
        request_id=request.request_id,
        session_id=request.session_id,
        metadata=dict(request.metadata),
        timeout=context.time_remaining(),
    )


class MeshServicer(mesh_pb2_grpc.MeshServicer):
    def __init__(self, mesh: Mesh, router: RouterService | None = None) -> None:
        self._mesh = mesh
        self._router = router or RouterService(RouterConfig(enabled=False))

    def _principal(self, context: Context) -> Principal:
        return self._mesh.authenticate(_authorization(context))

    async def ListFunctions(
        self, request: function_pb2.ListFunctionsRequest, context: Context
    ) -> function_pb2.ListFunctionsResponse:
        try:
            principal = self._principal(context)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        specs = [
            s
            for s in self._mesh.functions(principal)
            if not request.namespace or s.namespace == request.namespace
        ]
        namespaces = [
            NamespaceSpec(ns.name, ns.description)
            for ns in self._mesh.namespaces(principal)
            if not request.namespace or ns.name == request.namespace
        ]
        return wire.list_response(specs, namespaces)

    async def Invoke(self, request: invoke_pb2.InvokeRequest, context: Context) -> invoke_pb2.InvokeResponse:
        try:
            principal = self._principal(context)
            result = await self._mesh.invoke(
                principal, request.function, request.arguments or b"{}", _options(request, context)
            )
            raise_for_call_error(result)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return wire.result_to_proto(result)

    async def InvokeStream(
        self, request: invoke_pb2.InvokeRequest, context: Context
    ) -> AsyncIterator[invoke_pb2.InvokeStreamResponse]:
        try:
            principal = self._principal(context)
            events = self._mesh.stream(
                principal, request.function, request.arguments or b"{}", _options(request, context)
            )
            streamed = False
            async for event in events:
                if isinstance(event, Result):
                    if not streamed:
                        # Nothing sent yet: fail the way Invoke does (INVALID_ARGUMENT, DEADLINE_EXCEEDED).
                        raise_for_call_error(event)
                    yield invoke_pb2.InvokeStreamResponse(result=wire.result_to_proto(event))
                else:
                    streamed = True
                    for item in event:
                        yield invoke_pb2.InvokeStreamResponse(content=wire.content_to_proto(item))
        except ToolmeshError as exc:
            await wire.abort(context, exc)

    async def Route(self, request: mesh_pb2.RouteRequest, context: Context) -> mesh_pb2.RouteResponse:
        try:
            principal = self._principal(context)
            parsed = parse_route_request(request.prompt, request.k, request.session_id, self._router.config.k)
            ranked = await route(self._router, principal, parsed)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        candidates = [mesh_pb2.RouteCandidate(name=c.key, score=c.score) for c in ranked.candidates]
        return mesh_pb2.RouteResponse(match=ranked.match or "", candidates=candidates)
