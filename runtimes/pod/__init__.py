"""The runtime pod process: it hosts a registry's functions.

serving.py          the pod: a grpc.aio server, health, the drain on SIGTERM
template.py         the template process pods are forked from
executor.py         running calls: validation, timeouts, the in-flight limit (no transport)
executor_config.py  how the executor runs calls (its limits)
servicer.py         the gRPC Runtime service;  socket_server.py: the Unix-socket fast path
mesh_invoker.py     ctx.invoke through the gateway
telemetry.py        Prometheus metrics;  invocation_log.py: the line per call
settings.py         a pod's settings (flags);  deadlines.py: call deadlines, the worker threads
pod_process.py      dying with the parent, limits

What the gateway and a pod agree on (the call, the codec, the frames, the environment) is
in toolmesh/protocol/, which both sides import.
"""
