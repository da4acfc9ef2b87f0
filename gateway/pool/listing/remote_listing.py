"""A runtime reached by an address follows its pods' functions when they change on their own.

Such pods have no liveness socket; each answer of a pod whose functions changed carries its
`listing` trailer instead (toolmesh/protocol/listing_trailer.py): which pod, which revision. When a
pod's revision moves past the one last read from it, the gateway reads the functions again. The
address balances over the pods, so `ListFunctions` may reach another pod: its answer's trailer
says whose listing it is, and the reading is tried again (retries.py) until the pod that changed
answers. As for the pods the gateway forks, the last pod to change is believed; here until a
reload, since the gateway does not see pods behind an address exit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from toolmesh.gateway.pool.listing.retries import ListingMissed, read_with_retries
from toolmesh.protocol.listing_trailer import PodListing
from toolmesh.runtimes.functions.spec import FunctionSpec, NamespaceSpec

log = logging.getLogger("toolmesh.pool")

#: Seconds for one attempt to read the functions.
LISTING_TIMEOUT = 10.0

Listed = tuple[list[FunctionSpec], list[NamespaceSpec]]


class ListingClient(Protocol):
    """What is asked of the runtime's client (pool/runtime_client.py's `RuntimeClient`)."""

    #: Told the `listing` trailer of each call's answer.
    on_listing: Callable[[PodListing | None], None] | None

    async def listing(
        self, timeout: float
    ) -> tuple[list[FunctionSpec], list[NamespaceSpec], PodListing | None]: ...


class RemoteListing:
    """Hears the trailers of a remote runtime's answers (`heard`) and, when a pod's functions
    changed, reads them and hands them to `serve`."""

    def __init__(self, name: str, client: ListingClient, serve: Callable[[Listed], Awaitable[None]]) -> None:
        self.name = name
        self._client = client
        self._serve = serve
        #: The revision last read from each pod that changed.
        self._read: dict[str, int] = {}
        #: The reading under way, if any (one at a time: it reads the newest revision heard).
        self._reading: asyncio.Task[None] | None = None
        #: The newest change heard that is not read yet.
        self._wanted: PodListing | None = None
        #: Bumped by `forget()`: a reading begun before it is not served.
        self._epoch = 0
        self._closed = False
        #: Whether the runtime serves what a pod changed to (since start-up or the last reload).
        self.changed = False
        client.on_listing = self.heard

    def heard(self, trailer: PodListing | None) -> None:
        """The trailer of an answer (None: the pod serves what it started with)."""
        if trailer is None or self._closed or trailer.revision <= self._read.get(trailer.pod, 0):
            return
        self._wanted = trailer
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read_changes())

    def forget(self) -> None:
        """The runtime's functions were read afresh (a reload): changes heard before are moot."""
        self._epoch += 1
        self._read.clear()
        self._wanted = None
        self.changed = False

    async def _read_changes(self) -> None:
        try:
            while self._wanted is not None and not self._closed:
                wanted, self._wanted = self._wanted, None
                await self._read_change(wanted, self._epoch)
        finally:
            self._reading = None

    async def _read_change(self, wanted: PodListing, epoch: int) -> None:
        listed = await read_with_retries(
            lambda: self._attempt(wanted),
            self.name,
            f"the functions pod {wanted.pod} said changed",
            wanted=lambda: not self._closed and epoch == self._epoch,
        )
        if listed is None or self._closed or epoch != self._epoch:
            return  # failed: the pod's next answer says it again, and it is read again
        self._read[wanted.pod] = wanted.revision
        self.changed = True
        log.info(
            "a pod's functions changed",
            extra={"runtime": self.name, "pod": wanted.pod, "functions": len(listed[0])},
        )
        await self._serve(listed)

    async def _attempt(self, wanted: PodListing) -> Listed:
        specs, namespaces, trailer = await self._client.listing(LISTING_TIMEOUT)
        if trailer is None or trailer.pod != wanted.pod or trailer.revision < wanted.revision:
            answered = "a pod serving what it started with" if trailer is None else f"pod {trailer.pod}"
            raise ListingMissed(f"{answered} answered")
        return specs, namespaces

    async def close(self) -> None:
        self._closed = True
        if self._reading is not None:
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)
