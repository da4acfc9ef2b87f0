"""Generated protobuf and gRPC code for toolmesh.v1. Do not edit: see protos/generate.py."""
