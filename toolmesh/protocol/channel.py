"""Options of the gRPC servers on either side of the contract (pods and the gateway)."""

from __future__ import annotations


def server_options() -> list[tuple[str, int]]:
    """The options every toolmesh gRPC server is built with."""
    # SO_REUSEPORT would let two pods bind the same port and split its traffic.
    return [("grpc.so_reuseport", 0)]
