"""toolmesh's finished spans written straight into OTLP's protobuf bytes.

An `ExportTraceServiceRequest` holding one `ResourceSpans` with one `ScopeSpans`: the resource
and the scope are encoded once by the protobuf library (`Encoder.__init__`), each span here by
hand. Building a message per span (and two per attribute) through the protobuf library cost
about 20 µs a span on the export thread, which holds the GIL the call's thread needs; these
few byte joins cost a few. The field numbers are those of opentelemetry/proto/trace/v1/trace.proto
and common/v1/common.proto; `tests/tracing/test_otlp_wire.py` decodes what is written here
with the protobuf library and compares it field by field.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

_DOUBLE = struct.Struct("<d")
_INT64 = 1 << 64

# Tags: (field number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited).
_TRACE_ID, _SPAN_ID, _TRACE_STATE, _PARENT_ID, _NAME = b"\x0a", b"\x12", b"\x1a", b"\x22", b"\x2a"
_KIND, _START, _END, _ATTRIBUTE, _STATUS = b"\x30", b"\x39", b"\x41", b"\x4a", b"\x7a"
_KEY, _VALUE = b"\x0a", b"\x12"
_STRING, _BOOL, _INT, _DOUBLE_VALUE = b"\x0a", b"\x10", b"\x18", b"\x21"
_STATUS_MESSAGE, _STATUS_CODE_ERROR = b"\x12", b"\x18\x02"
_RESOURCE_SPANS, _SCOPE_SPANS, _SPANS = b"\x0a", b"\x12", b"\x12"
# The fixed-size fields with their tags and lengths.
_TRACE_ID_16, _SPAN_ID_8, _PARENT_ID_8 = _TRACE_ID + b"\x10", _SPAN_ID + b"\x08", _PARENT_ID + b"\x08"
_TIMES = struct.Struct("<BQBQ")
_BYTES = [bytes((i,)) for i in range(0x80)]
_CACHE_LIMIT = 1024
_NAMES: dict[str, bytes] = {}
_KEYS: dict[str, bytes] = {}


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _BYTES[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _delimited(tag: bytes, payload: bytes) -> bytes:
    size = len(payload)
    return tag + (_BYTES[size] if size < 0x80 else _varint(size)) + payload


def _any_value(value: Any) -> bytes:
    if type(value) is str:  # nearly every attribute: no isinstance chain for it
        return _delimited(_STRING, value.encode())
    # bool before int (a bool is an int); subclasses (an IntEnum) as their base type.
    if isinstance(value, bool):
        return _BOOL + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return _INT + _varint(value % _INT64)  # int64: a negative one as its two's complement
    if isinstance(value, float):
        return _DOUBLE_VALUE + _DOUBLE.pack(value)
    return _delimited(_STRING, str(value).encode())


def key_value(key: str, value: Any) -> bytes:
    """One `KeyValue` (an attribute), encoded."""
    return _delimited(_KEY, key.encode()) + _delimited(_VALUE, _any_value(value))


def _cached(cache: dict[str, bytes], tag: bytes, text: str) -> bytes:
    # Span names and attribute keys come from a small set (the code's own); the cap keeps a
    # process that makes endless distinct names from growing, at the price of encoding them.
    found = cache.get(text)
    if found is None:
        found = _delimited(tag, text.encode())
        if len(cache) < _CACHE_LIMIT:
            cache[text] = found
    return found


def span_bytes(span: Any) -> bytes:
    """One `Span` (a `FinishedSpan`), encoded."""
    parts = [
        _TRACE_ID_16,
        span.trace_id.to_bytes(16, "big"),
        _SPAN_ID_8,
        span.span_id.to_bytes(8, "big"),
    ]
    if span.state:
        parts.append(_delimited(_TRACE_STATE, span.state.encode()))
    if span.parent_id:
        parts += (_PARENT_ID_8, span.parent_id.to_bytes(8, "big"))
    parts += (
        _cached(_NAMES, _NAME, span.name),
        _KIND + _BYTES[span.kind],
        _TIMES.pack(_START[0], span.start, _END[0], span.end),
    )
    for key, value in span.attributes.items():
        attribute = _cached(_KEYS, _KEY, key) + _delimited(_VALUE, _any_value(value))
        parts.append(_delimited(_ATTRIBUTE, attribute))
    if span.error is not None:
        parts.append(
            _delimited(_STATUS, _delimited(_STATUS_MESSAGE, span.error.encode()) + _STATUS_CODE_ERROR)
        )
    return b"".join(parts)


class Encoder:
    """Export requests for one process: its resource and scope, then the spans of each batch."""

    def __init__(self, resource: Mapping[str, Any], scope: tuple[str, str]) -> None:
        from opentelemetry.proto.common.v1 import common_pb2
        from opentelemetry.proto.resource.v1 import resource_pb2

        encoded_resource = b"".join(_delimited(b"\x0a", key_value(k, v)) for k, v in resource.items())
        # Checked against the library's own encoding once, so a wrong hand here fails at start.
        resource_pb2.Resource.FromString(encoded_resource)
        self._resource = _delimited(b"\x0a", encoded_resource)
        self._scope = _delimited(
            b"\x0a", common_pb2.InstrumentationScope(name=scope[0], version=scope[1]).SerializeToString()
        )

    def request(self, spans: Iterable[bytes]) -> bytes:
        """An `ExportTraceServiceRequest` of already encoded spans."""
        scope_spans = self._scope + b"".join(_delimited(_SPANS, span) for span in spans)
        resource_spans = self._resource + _delimited(_SCOPE_SPANS, scope_spans)
        return _delimited(_RESOURCE_SPANS, resource_spans)
