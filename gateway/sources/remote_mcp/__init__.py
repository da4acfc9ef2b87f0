"""A remote MCP server (`mcp_url`, Streamable HTTP or the deprecated HTTP+SSE) as a runtime: each
tool a function, called by the gateway itself. http_session.py (Streamable HTTP) and sse_session.py
(HTTP+SSE) speak JSON-RPC with the server, transports.py picks one, mcp_results.py turns its tools
and answers into specs and results, remote_mcp_runtime.py serves them."""

from __future__ import annotations

from toolmesh.gateway.sources.remote_mcp.remote_mcp_runtime import RemoteMcpRuntime

__all__ = ["RemoteMcpRuntime"]
