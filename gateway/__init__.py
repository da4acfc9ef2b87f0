"""The gateway: the mesh's front door, split by concern.

    core/     the mesh service every front door calls (list, get, invoke, stream, route,
              execute, tools), typed requests, which errors each surface refuses; no transport
    http/     the Starlette app: the JSON API, free-text routes, the chat proxy's route, OpenAPI
    grpc/     the toolmesh.v1.Mesh servicer
    mcp/      the MCP endpoint (/mcp) on the official SDK
    openai/   OpenAI tool-call formats and the chat proxy's tool loop
    jobs/     asynchronous calls: jobs in a store (SQLite), workers, retries, dead letters, callbacks
    pool/     the serverless pool: template processes, replica sets, the activator, remote
              runtimes, the Kubernetes scaler, the clients that reach pods
    state/, idempotency/  stores shared with other replicas (Redis) or kept in this process
    sources/  services the gateway calls itself (OpenAPI, remote MCP, gRPC reflection)
    server.py runs it all on one event loop (`toolmesh up`); listeners.py binds its ports;
              environment.py reads what it needs of the environment; shared_state.py opens the stores

Layers, bottom up: state, identity < idempotency < core < jobs, openai < triggers < the front
doors (http, grpc, mcp); sources, reload < pool; the server on top (tests/test_layering.py).

Front doors convert their wire form to `core.requests` and delegate to `core.mesh.Mesh`;
errors are rendered by `toolmesh.error_shapes`.
"""
