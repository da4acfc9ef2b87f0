"""Conversions between the core types and toolmesh.v1 protobuf messages.

The only module besides the servicers that touches protobuf types: the pods (their servicer
and socket server), the gateway (its pool's clients and its Mesh service) and the gRPC client
SDK all convert here, so protobuf messages never reach the function SDK or the router.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable

import grpc

from toolmesh.error_shapes import grpc_status
from toolmesh.errors import ToolmeshError, Violation
from toolmesh.protocol.calls import Call, new_request_id
from toolmesh.runtimes.functions.call_events import CallEvent, Listener, LogEvent, ProgressEvent
from toolmesh.runtimes.functions.results import (
    Binary,
    Content,
    ErrorInfo,
    Extra,
    Json,
    Resource,
    Result,
    Text,
)
from toolmesh.runtimes.functions.spec import (
    FREE_TEXT_AUTO,
    Annotations,
    Feature,
    FunctionSpec,
    NamespaceSpec,
)
from toolmesh.v1 import function_pb2, invoke_pb2


def spec_to_proto(spec: FunctionSpec) -> function_pb2.FunctionSpec:
    a = spec.annotations
    return function_pb2.FunctionSpec(
        name=spec.name,
        namespace=spec.namespace,
        description=spec.description,
        input_schema=json.dumps(spec.input_schema).encode(),
        output_schema=json.dumps(spec.output_schema).encode() if spec.output_schema is not None else b"",
        annotations=function_pb2.FunctionAnnotations(
            read_only=a.read_only,
            destructive=a.destructive,
            idempotent=a.idempotent,
            open_world=a.open_world,
            title=a.title,
            free_text=a.free_text,
        ),
        timeout_seconds=spec.timeout or 0.0,
        version=spec.version,
        streaming=spec.streaming,
        runtime=spec.runtime,
        feature=_feature_to_proto(spec.feature),
        examples=list(spec.examples),
        task_support=spec.task_support,
        meta=_json_object(spec.meta),
    )


def _feature_to_proto(feature: Feature | None) -> function_pb2.McpFeature | None:
    if feature is None:
        return None
    return function_pb2.McpFeature(
        kind=feature.kind,
        uri=feature.uri,
        mime_type=feature.mime_type,
        target=feature.target,
        argument=feature.argument,
        title=feature.title,
        name=feature.name,
    )


def _feature_from_proto(message: function_pb2.FunctionSpec) -> Feature | None:
    if not message.HasField("feature"):
        return None
    f = message.feature
    return Feature(f.kind, f.uri, f.mime_type, f.target, f.argument, f.title, f.name)


def spec_from_proto(message: function_pb2.FunctionSpec) -> FunctionSpec:
    a = message.annotations
    return FunctionSpec(
        name=message.name,
        namespace=message.namespace,
        description=message.description,
        input_schema=json.loads(message.input_schema or b"{}"),
        output_schema=json.loads(message.output_schema) if message.output_schema else None,
        annotations=Annotations(
            a.read_only, a.destructive, a.idempotent, a.open_world, a.title, a.free_text or FREE_TEXT_AUTO
        ),
        timeout=message.timeout_seconds or None,
        version=message.version,
        streaming=message.streaming,
        runtime=message.runtime,
        feature=_feature_from_proto(message),
        examples=tuple(message.examples),
        task_support=message.task_support,
        meta=_object(message.meta),
    )


def list_response(
    specs: Iterable[FunctionSpec], namespaces: Iterable[NamespaceSpec]
) -> function_pb2.ListFunctionsResponse:
    return function_pb2.ListFunctionsResponse(
        functions=[spec_to_proto(s) for s in specs],
        namespaces=[function_pb2.NamespaceInfo(name=n.name, description=n.description) for n in namespaces],
    )


def call_from_proto(
    request: invoke_pb2.InvokeRequest,
    time_remaining: float | None,
    deliver: Callable[[CallEvent], None] | None = None,
) -> Call:
    """The call a request asks for; with `deliver`, a transport that can carry events gives the
    events the request asked for (if any) to it."""
    deadline = None if time_remaining is None else time.monotonic() + time_remaining
    call = Call(
        function=request.function,
        arguments=request.arguments,
        request_id=request.request_id or new_request_id(),
        session_id=request.session_id,
        metadata=dict(request.metadata) if request.metadata else {},
        deadline=deadline,
    )
    if deliver is not None and (request.log_level > 0 or request.progress):
        call.events = Listener(max(request.log_level, 0), request.progress, deliver)
    return call


def call_to_proto(call: Call) -> invoke_pb2.InvokeRequest:
    request = invoke_pb2.InvokeRequest(
        function=call.function, arguments=call.arguments, request_id=call.request_id
    )
    # Fields usually empty are set only when not: each keyword costs the constructor a lookup.
    if call.session_id:
        request.session_id = call.session_id
    if call.metadata:
        request.metadata.update(call.metadata)
    if call.events is not None:
        request.log_level = call.events.log_level
        request.progress = call.events.progress
    return request


def event_to_proto(event: CallEvent) -> invoke_pb2.CallEvent:
    if isinstance(event, LogEvent):
        record = invoke_pb2.LogRecord(
            level=event.level, message=event.message, logger=event.logger, extra=event.extra
        )
        return invoke_pb2.CallEvent(log=record)
    report = invoke_pb2.ProgressReport(progress=event.progress, message=event.message or "")
    if event.total is not None:
        report.total = event.total
    return invoke_pb2.CallEvent(progress=report)


def event_from_proto(message: invoke_pb2.CallEvent) -> CallEvent:
    if message.WhichOneof("kind") == "log":
        log = message.log
        return LogEvent(log.level, log.message, log.logger, log.extra)
    report = message.progress
    total = report.total if report.HasField("total") else None
    return ProgressEvent(report.progress, total, report.message or None)


def _json_object(value: Extra) -> bytes:
    """An `annotations` or `_meta` object as the protos carry it (empty bytes for none)."""
    return json.dumps(value, separators=(",", ":")).encode() if value else b""


def _object(data: bytes) -> Extra:
    return json.loads(data) if data else None


def _resource_to_proto(item: Resource) -> invoke_pb2.Resource:
    message = invoke_pb2.Resource(
        uri=item.uri,
        name=item.name,
        title=item.title,
        description=item.description,
        mime_type=item.mime_type,
        embedded=item.embedded,
    )
    if item.size is not None:
        message.size = item.size
    if item.text is not None:
        message.text = item.text
    elif item.blob is not None:
        message.blob = item.blob
    return message


def _resource_from_proto(message: invoke_pb2.Content) -> Resource:
    r = message.resource
    contents = r.WhichOneof("contents")
    return Resource(
        uri=r.uri,
        name=r.name,
        title=r.title,
        description=r.description,
        mime_type=r.mime_type,
        size=r.size if r.HasField("size") else None,
        embedded=r.embedded,
        text=r.text if contents == "text" else None,
        blob=r.blob if contents == "blob" else None,
        annotations=_object(message.annotations),
        meta=_object(message.meta),
    )


def content_to_proto(item: Content) -> invoke_pb2.Content:
    if isinstance(item, Text):
        message = invoke_pb2.Content(text=item.text)
    elif isinstance(item, Json):
        message = invoke_pb2.Content(json=item.data)
    elif isinstance(item, Binary):
        message = invoke_pb2.Content(binary=invoke_pb2.Binary(data=item.data, mime_type=item.mime_type))
    else:
        message = invoke_pb2.Content(resource=_resource_to_proto(item))
    # Most items have neither (a Python function's never do).
    if item.annotations:
        message.annotations = _json_object(item.annotations)
    if item.meta:
        message.meta = _json_object(item.meta)
    return message


def content_from_proto(message: invoke_pb2.Content) -> Content:
    kind = message.WhichOneof("kind")
    if kind == "resource":
        return _resource_from_proto(message)
    annotations, meta = _object(message.annotations), _object(message.meta)
    if kind == "json":
        return Json(message.json, annotations, meta)
    if kind == "binary":
        return Binary(message.binary.data, message.binary.mime_type, annotations, meta)
    return Text(message.text, annotations, meta)


def result_to_proto(result: Result) -> invoke_pb2.InvokeResponse:
    response = invoke_pb2.InvokeResponse(
        is_error=result.is_error,
        structured=result.structured_json or b"",
        timing=invoke_pb2.Timing(queued_ms=result.queued_ms, duration_ms=result.duration_ms),
        request_id=result.request_id,
    )
    if result.content:
        response.content.extend(content_to_proto(item) for item in result.content)
    if result.meta:
        response.meta = _json_object(result.meta)
    if result.error is not None:
        e = result.error
        response.error.CopyFrom(
            invoke_pb2.Error(
                code=e.code,
                message=e.message,
                violations=[
                    invoke_pb2.Violation(path=v.path, expected=v.expected, got=v.got, message=v.message)
                    for v in e.violations
                ],
                traceback=e.traceback,
                retryable=e.retryable,
            )
        )
    return response


def result_from_proto(message: invoke_pb2.InvokeResponse) -> Result:
    error = None
    if message.HasField("error"):
        e = message.error
        violations = tuple(Violation(v.path, v.expected, v.got, v.message) for v in e.violations)
        error = ErrorInfo(e.code, e.message, violations, e.traceback, e.retryable)
    return Result(
        content=[content_from_proto(c) for c in message.content],
        is_error=message.is_error,
        structured_json=message.structured or None,
        error=error,
        queued_ms=message.timing.queued_ms,
        duration_ms=message.timing.duration_ms,
        request_id=message.request_id,
        meta=_object(message.meta) if message.meta else None,
    )


def stream_messages(
    event: list[Content] | Result | LogEvent | ProgressEvent,
) -> list[invoke_pb2.InvokeStreamResponse]:
    """One event of a stream (content items as yielded, a call event, or the final result) as
    the messages `InvokeStream` sends, for the pod's and the gateway's servicers alike."""
    if isinstance(event, Result):
        return [invoke_pb2.InvokeStreamResponse(result=result_to_proto(event))]
    if isinstance(event, LogEvent | ProgressEvent):
        return [invoke_pb2.InvokeStreamResponse(call_event=event_to_proto(event))]
    return [invoke_pb2.InvokeStreamResponse(content=content_to_proto(item)) for item in event]


async def abort(context: grpc.aio.ServicerContext[object, object], error: ToolmeshError) -> None:
    """End an RPC with the error's status and the trailers that let a toolmesh client rebuild it."""
    status, details, trailers = grpc_status(error)
    # After what the call has set already (the gateway's x-request-id, gateway/grpc/rpc_log.py).
    context.set_trailing_metadata((*context.trailing_metadata(), *trailers))
    await context.abort(status, details)
