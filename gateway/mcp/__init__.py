"""The MCP front door: `/mcp` on the official SDK (endpoint.py) and the conversions of specs and
results to MCP's types (convert.py)."""
