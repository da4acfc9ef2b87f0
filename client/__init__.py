"""The Python client SDK: call a toolmesh gateway over HTTP (`Client`, `AsyncClient`) or
gRPC (`GrpcClient`). Needs only the slim install (`pip install toolmesh`)."""

from __future__ import annotations

from toolmesh.client.grpc import GrpcClient
from toolmesh.client.http import AsyncClient, Client
from toolmesh.client.jobs import RemoteJob

__all__ = ["AsyncClient", "Client", "GrpcClient", "RemoteJob"]
