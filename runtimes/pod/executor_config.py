"""How a pod's executor runs calls; the defaults come from the contract (toolmesh/protocol/defaults.py)."""

from __future__ import annotations

from dataclasses import dataclass

from toolmesh.protocol.defaults import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
)


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    """How a pod's executor runs calls (`toolmesh runtime`'s flags and PodSettings fill it in)."""

    #: Seconds a call may run when its function sets no timeout.
    default_timeout: float = DEFAULT_TIMEOUT
    #: Calls running at once before new ones are turned away (RESOURCE_EXHAUSTED).
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    #: Threads for sync functions.
    workers: int = DEFAULT_WORKERS
    #: Threads stuck in timed-out sync calls at which the pod stops taking calls to be
    #: replaced; None: half the workers (at least one), so the pod still has threads to finish
    #: the calls it is draining.
    max_stuck: int | None = None
    #: Largest result, in bytes; larger ones become resource_exhausted errors.
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    #: The pod's memory limit, named in the error of a call that runs out of memory.
    max_memory_mb: int | None = DEFAULT_MAX_MEMORY_MB
    #: How deep ctx.invoke chains may go, which stops runaway recursion.
    max_depth: int = DEFAULT_MAX_DEPTH
    #: Put tracebacks in error results. Never on in production: it leaks code paths.
    debug: bool = False
