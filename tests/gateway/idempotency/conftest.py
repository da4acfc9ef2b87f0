"""The shared-state tests' redis-server, for keyed calls across replicas."""

from tests.gateway.state.conftest import redis_server

__all__ = ["redis_server"]
