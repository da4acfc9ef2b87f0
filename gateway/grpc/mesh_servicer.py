"""The native gRPC front door: the `toolmesh.v1.Mesh` service, adapting messages to `Mesh`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc

from toolmesh.errors import InvalidRequest, PermissionDenied, ToolmeshError
from toolmesh.gateway.core.auth import Principal
from toolmesh.gateway.core.keyed_calls import REPLAYED_METADATA
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.core.requests import (
    CallOptions,
    ConfirmRequest,
    ExecuteRequest,
    InvokeRequest,
    RouteRequest,
)
from toolmesh.gateway.jobs.job import Job
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.state.function_state import FunctionStateService
from toolmesh.protocol import wire
from toolmesh.router.execution import Execution
from toolmesh.runtimes.functions.call_events import Interleaving, Listener
from toolmesh.runtimes.functions.durable_state import Operation, StateAnswer, StateOp
from toolmesh.runtimes.functions.spec import NamespaceSpec
from toolmesh.v1 import function_pb2, invoke_pb2, mesh_pb2, mesh_pb2_grpc

Context = grpc.aio.ServicerContext[object, object]

#: ctx.state's operations by their wire number.
_STATE_OPS: dict[int, Operation] = {
    mesh_pb2.StateRequest.GET: "get",
    mesh_pb2.StateRequest.SET: "set",
    mesh_pb2.StateRequest.INCR: "incr",
    mesh_pb2.StateRequest.DELETE: "delete",
    mesh_pb2.StateRequest.SET_IF_VERSION: "set_if_version",
    mesh_pb2.StateRequest.KEYS: "keys",
}


def _metadata(context: Context, name: str) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == name:
            return value if isinstance(value, str) else value.decode()
    return ""


def _authorization(context: Context) -> str | None:
    return _metadata(context, "authorization") or None


def _call_metadata(context: Context) -> tuple[str | None, str]:
    """The caller's authorization and the call's idempotency key, in one pass over the metadata."""
    authorization: str | None = None
    key = ""
    for name, value in context.invocation_metadata() or ():
        if name == "authorization":
            authorization = (value if isinstance(value, str) else value.decode()) or None
        elif name == "idempotency-key":
            key = value if isinstance(value, str) else value.decode()
    return authorization, key


def _invocation(
    request: invoke_pb2.InvokeRequest, context: Context, key: str, events: Listener | None = None
) -> InvokeRequest:
    options = CallOptions.parse(
        request.request_id,
        request.session_id,
        request.metadata,
        context.time_remaining(),
        idempotency_key=key,
    )
    return InvokeRequest(request.function, request.arguments or b"{}", options, events)


def _job(job: Job) -> mesh_pb2.Job:
    return mesh_pb2.Job(
        id=job.id,
        function=job.function,
        status=job.status.value,
        attempts=job.attempts,
        result_json=job.result or b"",
        error_code=(job.error or {}).get("code", ""),
        error_message=(job.error or {}).get("message", ""),
        created_at=job.created,
        updated_at=job.updated or job.created,
        finished_at=job.finished or 0.0,
    )


def _execution(execution: Execution) -> mesh_pb2.ExecuteResponse:
    confirmation = None
    if execution.confirmation is not None:
        held = execution.confirmation
        confirmation = mesh_pb2.Confirmation(
            token=held.get("token", ""),
            reason=held["reason"],
            destructive=held["destructive"],
            carried=held["carried"],
            expires_in=held.get("expires_in", 0.0),
        )
    return mesh_pb2.ExecuteResponse(
        status=execution.status,
        function=execution.function,
        arguments_json=json.dumps(execution.arguments).encode(),
        argument_sources=execution.sources,
        result_json=b"" if execution.result is None else json.dumps(execution.result).encode(),
        follow_up=execution.follow_up,
        routing_id=execution.route.routing_id,
        candidates=[
            mesh_pb2.RouteCandidate(name=c.key, score=c.score, dense=c.dense, lexical=c.lexical)
            for c in execution.route.candidates
        ],
        confirmation=confirmation,
        session_id=execution.session_id or "",
    )


class MeshServicer(mesh_pb2_grpc.MeshServicer):
    def __init__(
        self, mesh: Mesh, jobs: JobService | None = None, state: FunctionStateService | None = None
    ) -> None:
        self._mesh = mesh
        self._jobs = jobs
        self._state = state

    def _job_service(self) -> JobService:
        if self._jobs is None:
            raise InvalidRequest("asynchronous calls are off on this gateway ([jobs] enabled = false)")
        return self._jobs

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
            authorization, key = _call_metadata(context)
            principal = self._mesh.authenticate(authorization)  # before the request is read
            result = await self._mesh.invoke(principal, _invocation(request, context, key))
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        if result.replayed:
            context.set_trailing_metadata((*context.trailing_metadata(), *REPLAYED_METADATA))
        return wire.result_to_proto(result)

    async def InvokeStream(
        self, request: invoke_pb2.InvokeRequest, context: Context
    ) -> AsyncIterator[invoke_pb2.InvokeStreamResponse]:
        # A caller that asks (log_level, progress) gets the function's records and reports as
        # call_event messages among the items; unary Invoke has no room for them.
        wanted = request.log_level > 0 or request.progress
        interleaving = Interleaving(request.log_level, request.progress) if wanted else None
        listener = interleaving.listener if interleaving is not None else None
        try:
            authorization, key = _call_metadata(context)
            principal = self._mesh.authenticate(authorization)
            stream = self._mesh.stream(principal, _invocation(request, context, key, listener))
            events = stream if interleaving is None else interleaving.merge(stream)
            async for event in events:
                for message in wire.stream_messages(event):
                    yield message
        except ToolmeshError as exc:
            await wire.abort(context, exc)

    async def Route(self, request: mesh_pb2.RouteRequest, context: Context) -> mesh_pb2.RouteResponse:
        try:
            principal = self._principal(context)
            route = RouteRequest.parse(
                request.prompt,
                request.k or None,  # proto3: 0 is unset
                request.session_id,
                max_chars=self._mesh.router.config.max_prompt_chars,
            )
            ranked = await self._mesh.route(principal, route)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        candidates = [
            mesh_pb2.RouteCandidate(name=c.key, score=c.score, dense=c.dense, lexical=c.lexical)
            for c in ranked.candidates
        ]
        return mesh_pb2.RouteResponse(
            match=ranked.match or "", candidates=candidates, routing_id=ranked.routing_id
        )

    async def Execute(self, request: mesh_pb2.ExecuteRequest, context: Context) -> mesh_pb2.ExecuteResponse:
        try:
            principal = self._principal(context)
            options = CallOptions.parse("", request.session_id, {}, context.time_remaining())
            if request.confirm:
                if request.prompt or request.k or request.session_id or request.dry_run:
                    raise InvalidRequest("confirm goes alone: the planned call is run as it was planned")
                execution = await self._mesh.confirm(
                    principal, ConfirmRequest.parse(request.confirm, options)
                )
            else:
                route = RouteRequest.parse(
                    request.prompt,
                    request.k or None,  # proto3: 0 is unset
                    request.session_id,
                    max_chars=self._mesh.router.config.max_prompt_chars,
                )
                execution = await self._mesh.execute(
                    principal, ExecuteRequest(route, request.dry_run, options)
                )
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return _execution(execution)

    async def RouteFeedback(
        self, request: mesh_pb2.RouteFeedbackRequest, context: Context
    ) -> mesh_pb2.RouteFeedbackResponse:
        try:
            principal = self._principal(context)
            if request.wrong and request.function:
                raise InvalidRequest("give either the right function or wrong, not both", param="function")
            for name in ("routing_id",) if request.wrong else ("routing_id", "function"):
                if not getattr(request, name):
                    raise InvalidRequest(f"{name} must be a non-empty string", param=name)
            function = None if request.wrong else request.function
            learned = await self._mesh.route_feedback(principal, request.routing_id, function)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return mesh_pb2.RouteFeedbackResponse(
            function=learned["function"] or "",
            learned=learned["learned"] or "",
            learned_examples=learned["learned_examples"],
            unlearned={
                name: mesh_pb2.LearnedPrompts(prompts=prompts)
                for name, prompts in learned["unlearned"].items()
            },
        )

    async def SubmitJob(self, request: mesh_pb2.SubmitJobRequest, context: Context) -> mesh_pb2.Job:
        try:
            # The job outlives this rpc: its deadline is not the call's timeout.
            call = request.call
            options = CallOptions.parse(call.request_id, call.session_id, call.metadata)
            invocation = InvokeRequest(call.function, call.arguments or b"{}", options)
            # `idempotency-key` metadata: one job per key, as over HTTP (job_service.py).
            job, _ = await self._job_service().submit_once(
                self._principal(context),
                invocation,
                request.callback_url or None,
                _metadata(context, "idempotency-key") or None,
            )
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return _job(job)

    async def ResourceUpdated(
        self, request: mesh_pb2.ResourceUpdatedRequest, context: Context
    ) -> mesh_pb2.ResourceUpdatedResponse:
        try:
            await self._mesh.resource_updated(self._principal(context), request.uri)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return mesh_pb2.ResourceUpdatedResponse()

    async def State(self, request: mesh_pb2.StateRequest, context: Context) -> mesh_pb2.StateResponse:
        try:
            # The runtime comes from the pod's token, never from the request.
            runtime = self._principal(context).runtime
            if runtime is None or self._state is None:
                raise PermissionDenied("only the pods this gateway runs may use ctx.state (with their token)")
            op = _STATE_OPS.get(request.op)
            if op is None:
                raise InvalidRequest(f"unknown ctx.state operation {request.op}", param="op")
            answer: StateAnswer = await self._state.apply(
                runtime,
                StateOp(op, request.key, request.value_json, request.ttl, request.version, request.prefix),
            )
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return mesh_pb2.StateResponse(
            found=answer.found, value_json=answer.value_json, version=answer.version, keys=answer.keys
        )

    async def GetJob(self, request: mesh_pb2.GetJobRequest, context: Context) -> mesh_pb2.Job:
        try:
            job = await self._job_service().get(self._principal(context), request.id)
        except ToolmeshError as exc:
            await wire.abort(context, exc)
            raise
        return _job(job)
