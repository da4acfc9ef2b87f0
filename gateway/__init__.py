"""The gateway: the mesh's front door.

A Starlette app on uvicorn (`app.py`) and the gRPC `Mesh` service
(`grpc_service.py`) are thin adapters over one transport-free core (`mesh.py`),
which reaches runtimes through a pool (`pool.py`). `server.py` runs them all
on one event loop; `toolmesh up` starts it. `client.py` holds the Python SDK.
"""
