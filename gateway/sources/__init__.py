"""Sources of functions the gateway serves itself, with no pods: services it calls over their own
protocol (OpenAPI over HTTP, a remote MCP server, a gRPC server read by reflection), behind the
same `Pool` as pods; and the environment a stdio MCP server's pods need (stdio_mcp.py).

    base/             what every source shares (`ServiceRuntime`, `GatewaySource`, naming)
    openapi/          an OpenAPI service
    remote_mcp/       a remote MCP server (Streamable HTTP)
    grpc_reflection/  a gRPC server read by reflection
    factory.py        the one place that picks the source for a runtime's config
"""
