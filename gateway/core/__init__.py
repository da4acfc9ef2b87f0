"""The transport-free core: `mesh.Mesh` is what every front door calls.

    mesh.py          Mesh: listing, calls, batches, routing and execution for a principal
    requests.py      the typed requests front doors build (CallOptions, InvokeRequest, RouteRequest, ...)
    surfaces.py      which failures each surface refuses and which become error results
    auth.py          API keys and access tokens, scopes and rate limits -> Principal
    catalog.py       every function in the mesh, by name
    free_text.py     the router's view of the catalog; ranking off the event loop
    tool_formats.py  specs as OpenAI / Responses / Cloudflare / MCP tool definitions
    keyed_calls.py   `Idempotency-Key`: claim the key, wait for a running one, replay, settle
    result_json.py   a Result as the JSON document HTTP callers read
    metrics.py       the gateway's call metrics

Nothing here imports Starlette, grpc servicers or the MCP SDK.
"""
