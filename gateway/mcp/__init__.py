"""The MCP front door: `/mcp` on the official SDK (endpoint.py), the conversions of specs and
results to MCP's types (convert.py), and calls that ask their caller: input-required results and
their sealed requestState (input_requests.py), server-to-client requests in the 2025 era
(client_requests.py)."""
