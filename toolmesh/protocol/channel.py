"""Options of the gRPC servers on either side of the contract (pods and the gateway), and of the
channels that reach them (the gateway's to its pods, the client SDK's to the gateway)."""

from __future__ import annotations


def server_options() -> list[tuple[str, int]]:
    """The options every toolmesh gRPC server is built with."""
    # SO_REUSEPORT would let two pods bind the same port and split its traffic.
    return [("grpc.so_reuseport", 0)]


#: gRPC's default reconnect backoff starts near 1 s: far too slow for a pod that
#: was starting a moment ago. These keep reconnects quick but bounded.
CHANNEL_OPTIONS: list[tuple[str, int]] = [
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
]
