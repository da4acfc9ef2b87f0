"""The `listing` revision on the trailers of a pod's gRPC answers, for pods reached by an address.

A pod the gateway forked says that its functions changed on their own (a stdio MCP server's
`list_changed`) in its liveness answer (loop_report.py). A pod reached by an address (Kubernetes)
has no liveness socket, so it says it on what it answers anyway: every answer of a pod whose
functions changed carries the trailer

    toolmesh-listing: <pod> <revision>

`pod` names the pod process: its host name (on Kubernetes, the pod's name), pid and a few random
characters, since a container restarted in the same pod has the same name and pid and counts its
revisions from 0 again. `revision` counts the changes (registry.py). A pod still serving what it
started with adds nothing, so the common answer is unchanged. The gateway's side is
gateway/pool/listing/.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The trailing-metadata key (gRPC keys are lower case).
LISTING_TRAILER = "toolmesh-listing"


@dataclass(frozen=True, slots=True)
class PodListing:
    """Which pod answered, and the revision of the functions it serves (0: what it started with)."""

    pod: str
    revision: int

    def encode(self) -> tuple[str, str]:
        return LISTING_TRAILER, f"{self.pod} {self.revision}"

    @classmethod
    def decode(cls, value: str) -> PodListing:
        pod, _, revision = value.rpartition(" ")
        if not pod:
            raise ValueError(f"a {LISTING_TRAILER} trailer is '<pod> <revision>', not {value!r}")
        return cls(pod, int(revision))


def this_pod() -> str:
    """How a pod names itself in its trailers: unique among the pods behind one address."""
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"


def listing_in(metadata: Iterable[tuple[str, Any]] | None) -> PodListing | None:
    """The trailer in an answer's trailing metadata, if it has a well-formed one."""
    for key, value in metadata or ():
        if key == LISTING_TRAILER:
            try:
                return PodListing.decode(value if isinstance(value, str) else bytes(value).decode())
            except ValueError:
                return None
    return None
