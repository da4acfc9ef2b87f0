"""The bounds of the public gRPC port, the counterpart of the HTTP port's `ConnectionGuard`.

grpc.aio has no per-connection hooks, but C-core's channel arguments cover the same ground:
a connection that never finishes its HTTP/2 handshake is dropped (slowloris over gRPC), idle and
dead connections are closed, and the number of connections and of streams on each is capped.
"""

from __future__ import annotations

from toolmesh.protocol.channel import server_options

#: Concurrent RPCs on one connection; a client that needs more opens another connection (grpc
#: clients queue the rest meanwhile). C-core's default is unbounded.
MAX_CONCURRENT_STREAMS = 256
#: A connection with no RPC for this long gets a GOAWAY; clients reconnect when they next call.
MAX_CONNECTION_IDLE_MS = 5 * 60 * 1000
#: The gateway pings a connection that has been quiet this long, and drops it if the ping is not
#: answered in KEEPALIVE_TIMEOUT_MS: a vanished client's connection does not linger for hours.
KEEPALIVE_TIME_MS = 2 * 60 * 1000
KEEPALIVE_TIMEOUT_MS = 20 * 1000
#: gRPC clients are services holding a few multiplexed connections, not browsers: they get a
#: quarter of the HTTP port's connection cap.
GRPC_SHARE = 4


def public_server_options(http_connections: int, handshake_timeout: float) -> list[tuple[str, int]]:
    """Options for the public gRPC server, given the HTTP connection cap and `[gateway]
    header_timeout` (which also bounds the HTTP/2 handshake)."""
    return [
        *server_options(),
        ("grpc.max_allowed_incoming_connections", max(1, http_connections // GRPC_SHARE)),
        ("grpc.server_handshake_timeout_ms", max(1, round(handshake_timeout * 1000))),
        ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS),
        ("grpc.max_connection_idle_ms", MAX_CONNECTION_IDLE_MS),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ]
