"""The runtime pod process: it hosts a registry's functions.

serving.py          the pod: a grpc.aio server, health, the drain on SIGTERM
template.py         the template process pods are forked from
executor.py         running calls: validation, timeouts, the in-flight limit (no transport)
servicer.py         the gRPC Runtime service;  socket_protocol.py: the Unix-socket fast path
wire.py             protobuf messages <-> toolmesh types
mesh_invoker.py     ctx.invoke through the gateway
telemetry.py        Prometheus metrics;  logs.py: JSON log lines
deadlines.py      call deadlines, the worker threads;  pod_process.py: dying with the parent, limits
"""
