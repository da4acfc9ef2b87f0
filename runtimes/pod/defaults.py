"""A runtime pod's defaults, each defined once.

`toolmesh runtime`'s flags, `PodSettings`, the executor and the gateway's
``[[runtimes]]`` entries (toolmesh/config.py) all take their defaults from here.
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
#: Calls running at once before new ones are turned away (RESOURCE_EXHAUSTED).
DEFAULT_MAX_INFLIGHT = 256
#: Threads for sync functions.
DEFAULT_WORKERS = 32
DEFAULT_LOG_LEVEL: LogLevel = "info"
