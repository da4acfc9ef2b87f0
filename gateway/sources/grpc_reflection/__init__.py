"""A gRPC server read by reflection (`grpc_reflection`) as a runtime: each unary or
server-streaming method a function, called by the gateway itself. reflection_client.py reads the
descriptors, message_schemas.py (well_known_schemas.py) turns messages into JSON Schema,
json_mapping.py converts messages to and from JSON, status_details.py reads rich error details,
grpc_reflection_runtime.py calls."""

from __future__ import annotations

from toolmesh.gateway.sources.grpc_reflection.grpc_reflection_runtime import GrpcReflectionRuntime

__all__ = ["GrpcReflectionRuntime"]
