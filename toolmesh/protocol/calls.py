"""A call as the gateway hands it to a pod, and how it ended: the types both sides share.

`Call` is what every front door builds and every transport carries (the gRPC and socket
codecs in wire.py and frames.py); `outcome_of` names how a call ended, for the metrics and
logs of both sides; `REFUSED` marks an error the pod raised before running any of the call.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import toolmesh.tracing as tracing
from toolmesh.errors import FunctionTimeout, InvalidArguments, InvalidRequest, ResourceExhausted
from toolmesh.runtimes.functions.call_events import Listener
from toolmesh.runtimes.functions.results import Result

#: In an Unavailable error's details: the pod turned the call away before running any of it,
#: so sending it to another pod is safe whether or not the function is idempotent.
REFUSED = "refused"


@dataclass(slots=True)
class Call:
    """One request to run a function, as the executor sees it. Treat it as immutable
    (it is not frozen only because frozen dataclasses are slow to build, and one is
    built for every call)."""

    function: str
    arguments: bytes = b""
    request_id: str = ""
    session_id: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    #: The caller's own deadline on the `time.monotonic()` clock, if it set one.
    deadline: float | None = None
    received_at: float = field(default_factory=time.perf_counter)
    #: The caller's trace context (W3C pairs or the ids of the caller's span); empty when not traced.
    trace: tracing.Trace = ()
    #: What the caller wants to hear while the call runs (log records, progress); None: nothing.
    events: Listener | None = None


def new_request_id() -> str:
    """32 random hex digits. From `random`, not the OS: an id needs to be unique, not secret,
    and this is a tenth of a system call's cost (`random` is reseeded in forked pods)."""
    return f"{random.getrandbits(128):032x}"


class Outcome:
    """The bounded set of outcome label values."""

    OK = "ok"
    ERROR = "error"
    INVALID_ARGUMENTS = "invalid_arguments"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    REJECTED = "rejected"
    NOT_FOUND = "not_found"


def outcome_of(result: Result) -> str:
    if not result.is_error or result.error is None:
        return Outcome.OK
    return {
        InvalidArguments.code: Outcome.INVALID_ARGUMENTS,
        InvalidRequest.code: Outcome.INVALID_ARGUMENTS,
        FunctionTimeout.code: Outcome.TIMEOUT,
        ResourceExhausted.code: Outcome.RESOURCE_EXHAUSTED,
    }.get(result.error.code, Outcome.ERROR)
