"""How the gateway reaches a pod for a unary call: one seam, two roads, one retry loop.

`PodTransport` is what the pool calls; `SocketClient` (the Unix-socket frames, for the pods the
gateway forks) and `RuntimeClient` (gRPC, for every pod) plug into it, so the pool never picks
a road per call. Streams, listings and health stay on gRPC (`RuntimeClient`).

`with_retries` is the pool's one retry loop: each attempt decides for itself whether the call
may go to another pod (`TryElsewhere`), which is safe when its function is idempotent or no pod
ran any of it (`retry_is_safe`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from toolmesh.errors import ToolmeshError, Unavailable
from toolmesh.protocol.calls import REFUSED, Call
from toolmesh.runtimes.functions.results import Result

log = logging.getLogger("toolmesh.pool")
T = TypeVar("T")


class PodTransport(Protocol):
    """A road to one pod (or one balanced address) for unary calls."""

    async def invoke(self, call: Call, timeout: float) -> Result:
        """Run `call` within `timeout` seconds. A pod that cannot be reached, or is lost
        mid-call, raises `PodUnreachable`; the pod's own refusals raise their toolmesh error."""
        ...

    async def ping(self, timeout: float) -> bool:
        """Whether the pod's event loop answers within `timeout` seconds."""
        ...

    async def close(self) -> None: ...


def retry_is_safe(error: Unavailable, idempotent: bool) -> bool:
    """A call may go to another pod if its function is idempotent or no pod ran any of it."""
    return idempotent or error.details.get(REFUSED) is True


class TryElsewhere(Exception):
    """Raised by an attempt whose call may be sent again; `error` is what the caller gets when
    no attempt is left."""

    def __init__(self, error: ToolmeshError) -> None:
        super().__init__(error.message)
        self.error = error


async def with_retries(attempt: Callable[[], Awaitable[T]], tries: int, runtime: str) -> T:
    """Run `attempt` until it returns, raises anything but `TryElsewhere`, or `tries` are spent."""
    for left in range(tries - 1, -1, -1):
        try:
            return await attempt()
        except TryElsewhere as retry:
            if not left:
                raise retry.error from None
        log.info("retrying a call on another pod", extra={"runtime": runtime})
    raise AssertionError("unreachable")
