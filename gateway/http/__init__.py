"""The HTTP front door: Starlette routes that convert requests, call `core.mesh.Mesh` and render.

app.py               the app: /v1/functions, /v1/tools, /v1/tool_calls, health, metrics, error handlers
free_text_routes.py  /v1/route and /v1/execute
chat_routes.py       /v1/chat/completions (the chat proxy's HTTP face)
job_routes.py        /v1/jobs and `Prefer: respond-async`: asynchronous calls
invocation_routes.py /v1/invocations/recent: the last calls the key may see
openapi/             the OpenAPI document, one module per group of paths
guards/              browser checks and connection limits around every HTTP server
lean/                the hottest routes without Starlette's per-request layers
adapt.py             what every route shares: the caller, the body, JSON and error responses
payloads.py          request bodies: size and depth limits
"""
