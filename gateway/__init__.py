"""The gateway: HTTP, OpenAI-format tool calls, MCP and the native gRPC Mesh service.

Not built yet (issue 3); the package exists so the layout and the public
contract (protos/toolmesh/v1/mesh.proto) are in place.
"""
