"""The hand-written OTLP encoding is byte for byte what the protobuf library writes."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from toolmesh.tracing.otlp_batch import SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, FinishedSpan
from toolmesh.tracing.otlp_wire import Encoder, span_bytes

RESOURCE = {"service.name": "toolmesh-gateway", "telemetry.sdk.language": "python", "process.pid": 4242}


def _value(value: Any) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    return common_pb2.AnyValue(string_value=str(value))


def _attributes(attributes: dict[str, Any]) -> list[common_pb2.KeyValue]:
    return [common_pb2.KeyValue(key=k, value=_value(v)) for k, v in attributes.items()]


def _library(span: FinishedSpan) -> trace_pb2.Span:
    status = None
    if span.error is not None:
        status = trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message=span.error)
    return trace_pb2.Span(
        trace_id=span.trace_id.to_bytes(16, "big"),
        span_id=span.span_id.to_bytes(8, "big"),
        trace_state=span.state,
        parent_span_id=span.parent_id.to_bytes(8, "big") if span.parent_id else b"",
        name=span.name,
        kind=span.kind,
        start_time_unix_nano=span.start,
        end_time_unix_nano=span.end,
        attributes=_attributes(span.attributes),
        status=status,
    )


def _span(**changes: Any) -> FinishedSpan:
    span = FinishedSpan("POST", SPAN_KIND_SERVER, (1 << 127) | 5, (1 << 63) | 7, 0, "", {})
    span.end = span.start + 123_456
    for key, value in changes.items():
        setattr(span, key, value)
    return span


SPANS = [
    _span(),
    _span(parent_id=(1 << 64) - 1, state="vendor=a,other=b", kind=SPAN_KIND_INTERNAL),
    _span(name="toolmesh.function sample.add \u00e9\u4e2d", error="KeyError"),
    _span(
        attributes={
            "url.path": "/v1/functions/" + "x" * 300,
            "http.response.status_code": 200,
            "toolmesh.k": -3,
            "big": (1 << 63) - 1,
            "ratio": 0.25,
            "toolmesh.cold": True,
            "toolmesh.dry_run": False,
        }
    ),
]


@pytest.mark.parametrize("span", SPANS)
def test_a_span_is_written_as_the_library_writes_it(span: FinishedSpan) -> None:
    assert span_bytes(span) == _library(span).SerializeToString()


def test_an_export_request_is_written_as_the_library_writes_it() -> None:
    encoder = Encoder(RESOURCE, ("toolmesh", "0.1.0"))
    request = trace_service_pb2.ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(_attributes(RESOURCE))
    scope_spans = resource_spans.scope_spans.add(
        scope=common_pb2.InstrumentationScope(name="toolmesh", version="0.1.0")
    )
    scope_spans.spans.extend(_library(span) for span in SPANS)
    assert encoder.request(span_bytes(span) for span in SPANS) == request.SerializeToString()
    empty = trace_service_pb2.ExportTraceServiceRequest.FromString(encoder.request([]))
    assert len(empty.resource_spans[0].scope_spans[0].spans) == 0
