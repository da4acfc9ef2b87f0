"""A runtime pod's defaults, each defined once: the numbers both sides of the contract agree on.

`toolmesh runtime`'s flags, `PodSettings`, the executor and the gateway's
``[[runtimes]]`` entries (toolmesh/config/runtime.py) all take their defaults from here.
It imports nothing of toolmesh, so the gateway's config and the deploy renderer
can read it without loading a pod.
"""

from __future__ import annotations

from typing import Literal, get_args

#: The pod's log levels; "warning" silences the per-call log lines.
LogLevel = Literal["debug", "info", "warning", "error"]
#: How a template process starts pods: fork itself (fast) or exec a fresh interpreter.
TemplateMode = Literal["fork", "exec"]

LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
TEMPLATE_MODES: tuple[TemplateMode, ...] = get_args(TemplateMode)

DEFAULT_HOST = "127.0.0.1"
#: gRPC port (Runtime, health, reflection).
DEFAULT_PORT = 50061
#: Prometheus /metrics port.
DEFAULT_METRICS_PORT = 9461
#: Seconds in-flight calls get to finish after SIGTERM.
DEFAULT_DRAIN_GRACE = 10.0
#: Seconds a call may run when its function sets no timeout.
DEFAULT_TIMEOUT = 30.0
#: Seconds a call's async code may hold the event loop before it is reported (a log line and
#: a metric naming it); the pod is replaced only if it still holds it when the call times out.
DEFAULT_LOOP_BLOCKED_AFTER = 1.0
#: Calls running at once before new ones are turned away (RESOURCE_EXHAUSTED).
DEFAULT_MAX_INFLIGHT = 256
#: Threads for sync functions.
DEFAULT_WORKERS = 32
DEFAULT_LOG_LEVEL: LogLevel = "info"

#: Largest message on a pod's wires: gRPC (both ends are configured for it) and the Unix socket.
WIRE_LIMIT_BYTES = 64 * 1024 * 1024
#: Largest result a call may return, counted as the bytes of its content and structured JSON.
#: Well below the wire limit, so an oversized result becomes an error result for that call
#: instead of a message the transport refuses (which would take the pod's other calls with it).
DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024
#: The highest max_result_bytes accepted: room is left under the wire limit for the envelope.
MAX_RESULT_BYTES_CEILING = WIRE_LIMIT_BYTES - 1024 * 1024
#: A pod's address-space limit in MiB (RLIMIT_AS), or None for no limit. Off by default: an
#: address-space limit counts reservations, not use, and some libraries reserve far more than
#: they touch (CUDA, JIT runtimes); set it per runtime where the modules are known.
DEFAULT_MAX_MEMORY_MB: int | None = None
#: The lowest max_memory_mb accepted. Measured with a small module and the arenas capped
#: (pod_process.py): an idle pod reserves about 200 MiB of address space, and with its 32 workers
#: busy about 450 MiB (each thread has an 8 MiB stack). The pod checks its own need at start.
MIN_MAX_MEMORY_MB = 512
#: The pods' /proc/self/oom_score_adj: when the machine runs out of memory the kernel picks a
#: pod (which the pool replaces) before the gateway or a template (which every pod depends on).
POD_OOM_SCORE_ADJ = 500

#: Exit status of a pod that stopped itself to be replaced (EX_TEMPFAIL): too many of its
#: threads were stuck in calls that had timed out.
RECYCLED = 75
#: How deep ctx.invoke chains may go.
DEFAULT_MAX_DEPTH = 8
