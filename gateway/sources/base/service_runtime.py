"""What the pool needs of a source the gateway calls itself (`RuntimeConfig.in_gateway`), and what
every such source shares: its bookkeeping (`GatewaySource`) and a call's arguments as an object."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from toolmesh.config.runtime_config import RuntimeConfig
from toolmesh.errors import InvalidRequest
from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec


class ServiceRuntime(Protocol):
    """A runtime served by the gateway calling a service: no pods, one pooled client."""

    config: RuntimeConfig
    specs: list[FunctionSpec]
    namespaces: list[NamespaceSpec]
    #: Why its functions could not be read at start, when they could not.
    error: str | None
    #: Called when its functions changed on their own (the service said so), set by the pool.
    listing_changed: Callable[[], Awaitable[None]] | None

    @property
    def ready(self) -> bool: ...

    @property
    def inflight(self) -> int: ...

    @property
    def pending(self) -> int: ...

    def replica_counts(self) -> Mapping[str, int]: ...

    async def start(self, *, strict: bool = False) -> None: ...

    async def close(self) -> None: ...

    async def invoke(self, call: Call, timeout: float, *, idempotent: bool = False) -> Result: ...

    def stream(self, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]: ...


def call_arguments(raw: bytes) -> dict[str, Any]:
    """A call's arguments as the object a service is sent; InvalidRequest when they are not one."""
    if not raw:
        return {}
    try:
        arguments = json.loads(raw)
    except ValueError:
        raise InvalidRequest("the arguments are not JSON") from None
    if not isinstance(arguments, dict):
        raise InvalidRequest("the arguments must be a JSON object")
    return arguments


class GatewaySource:
    """What every `ServiceRuntime` keeps alike: its functions, why they could not be read, its
    calls in flight, and no queue (a call goes to the service at once). `ready` is its own."""

    def __init__(self, config: RuntimeConfig) -> None:
        self.config = config
        self.name = config.name
        self._inflight = 0
        self.specs: list[FunctionSpec] = []
        self.namespaces: list[NamespaceSpec] = []
        #: Why its functions could not be read at start, when they could not.
        self.error: str | None = None
        #: Called when its functions changed on their own (the service said so), set by the pool.
        self.listing_changed: Callable[[], Awaitable[None]] | None = None

    @property
    def ready(self) -> bool:
        raise NotImplementedError

    @property
    def inflight(self) -> int:
        return self._inflight

    @property
    def pending(self) -> int:
        return 0

    def replica_counts(self) -> Mapping[str, int]:
        return {"ready": int(self.ready)}
