"""The gRPC front door: the `toolmesh.v1.Mesh` servicer (service.py), adapting messages to `Mesh`."""
