"""The rich error details a gRPC server may send with a failed status: a google.rpc.Status in the
`grpc-status-details-bin` trailer, its `details` Anys (google.rpc.BadRequest, ErrorInfo...).
google.rpc.Status is built here from its three fields, so no googleapis package is needed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

#: The trailer that carries the status, serialized.
DETAILS_TRAILER = "grpc-status-details-bin"


def _status_class() -> type[Message]:
    file = descriptor_pb2.FileDescriptorProto(
        name="toolmesh/google_rpc_status.proto", package="google.rpc", syntax="proto3"
    )
    file.dependency.append("google/protobuf/any.proto")
    status = file.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=5, label=1, json_name="code")  # int32
    status.field.add(name="message", number=2, type=9, label=1, json_name="message")  # string
    status.field.add(
        name="details", number=3, type=11, label=3, type_name=".google.protobuf.Any", json_name="details"
    )
    pool = descriptor_pool.DescriptorPool()
    any_file = descriptor_pb2.FileDescriptorProto()
    any_pb2.DESCRIPTOR.CopyToProto(any_file)
    pool.Add(any_file)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("google.rpc.Status"))


_STATUS = _status_class()


def status_details(trailing: Iterable[Any] | None) -> list[any_pb2.Any]:
    """The details of the status in `trailing` metadata; none when there is none or it is
    not a google.rpc.Status."""
    for key, value in trailing or ():
        if key == DETAILS_TRAILER and isinstance(value, bytes):
            try:
                status = _STATUS.FromString(value)
            except DecodeError:
                return []
            found = []
            for detail in status.details:  # type: ignore[attr-defined]
                copied = any_pb2.Any()
                copied.ParseFromString(detail.SerializeToString())
                found.append(copied)
            return found
    return []
