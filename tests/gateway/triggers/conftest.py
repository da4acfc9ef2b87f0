"""The triggers' tests use the shared-state tests' redis-server."""

from tests.gateway.state.conftest import redis_server

__all__ = ["redis_server"]
