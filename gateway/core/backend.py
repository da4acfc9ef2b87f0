"""The seam between the core and whatever runs the runtimes: `RuntimePool`.

The serverless pool (gateway/pool/) implements it; tests and other deployments can
plug in their own, and the core never imports the pool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from toolmesh.protocol.calls import Call
from toolmesh.runtimes.functions.results import Content, Result
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec


@dataclass(frozen=True, slots=True)
class PodRef:
    """A live pod the gateway runs, whose metrics it can fetch."""

    runtime: str
    #: Its process id, as text (a Prometheus label).
    pod: str


@dataclass(frozen=True, slots=True)
class Loading:
    """A runtime whose functions are not known yet: still starting, or failed and tried again in
    the background. A call in its namespace is refused as `Unavailable` with these, not as unknown."""

    #: What the caller is told ("runtime 'memory' is still starting").
    message: str
    #: Seconds after which trying again may succeed (the Retry-After).
    retry_after: float


class RuntimePool(Protocol):
    """What the gateway needs from whatever runs its runtimes."""

    def runtimes(self) -> Sequence[str]: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def readiness(self) -> Mapping[str, bool]:
        """Whether each runtime can take calls now (or as soon as a pod starts)."""
        ...

    async def reload(self, runtime: str) -> None:
        """Load `runtime`'s functions again and serve the new version, with no call failing; on
        failure, raise (the old version serving on)."""
        ...

    def prepare_reloads(self) -> None:
        """Reloads are coming (the gateway watches the modules): get ready to make them fast."""
        ...

    def on_listing_changed(self, listener: Callable[[], Awaitable[None]]) -> None:
        """Call `listener` when a runtime's functions changed on their own (a remote MCP server's
        `list_changed`): the catalog is to be read again."""
        ...

    def loading(self) -> Mapping[str, Loading]:
        """The runtimes whose functions are not known yet, by name (a runtime's name is its
        functions' namespace)."""
        ...

    async def list_functions(self, runtime: str) -> tuple[list[FunctionSpec], list[NamespaceSpec]]: ...

    async def invoke(self, runtime: str, call: Call, timeout: float, *, idempotent: bool = False) -> Result:
        """Run a call; `idempotent` calls may be retried once on another pod."""
        ...

    def stream(self, runtime: str, call: Call, timeout: float) -> AsyncIterator[list[Content] | Result]: ...

    def pods(self) -> Sequence[PodRef]:
        """The live pods this gateway runs itself (not those a cluster runs), for metrics discovery."""
        ...

    async def pod_metrics(self, pod: PodRef) -> bytes | None:
        """That pod's Prometheus exposition, or None when it is gone or serves none."""
        ...
