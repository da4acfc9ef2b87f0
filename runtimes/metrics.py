"""Prometheus metrics of a runtime pod, served on their own HTTP port.

    toolmesh_runtime_invocations_total{function,outcome}            counter
    toolmesh_runtime_invocation_duration_seconds{function,outcome}  histogram (arrival to result)
    toolmesh_runtime_inflight_requests                              gauge
    toolmesh_runtime_functions                                      gauge (functions hosted)

`function` is always a hosted function's qualified name, or "" for calls to
unknown names, so clients cannot inflate the label set. `outcome` is one of
ok, error, invalid_arguments, timeout, cancelled, rejected, not_found.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from toolmesh.runtimes.executor import Call

# The *_created series double the exposition for no use here.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Latency buckets from 100 µs (a no-op) to a minute (a slow tool).
BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
)


class PodMetrics:
    """Executor observer that records every finished call."""

    def __init__(self, registry: CollectorRegistry, inflight: Callable[[], float], functions: int) -> None:
        self.registry = registry
        self._invocations = Counter(
            "toolmesh_runtime_invocations",
            "Calls that ended, by function and outcome.",
            ["function", "outcome"],
            registry=registry,
        )
        self._duration = Histogram(
            "toolmesh_runtime_invocation_duration_seconds",
            "Time from a call's arrival to its result.",
            ["function", "outcome"],
            buckets=BUCKETS,
            registry=registry,
        )
        Gauge("toolmesh_runtime_inflight_requests", "Calls running now.", registry=registry).set_function(
            inflight
        )
        Gauge("toolmesh_runtime_functions", "Functions this pod hosts.", registry=registry).set(functions)
        # labels() costs a lock and a dict lookup; cache the children on the hot path.
        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def finished(self, call: Call, function: str, outcome: str, seconds: float) -> None:
        key = (function, outcome)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self._invocations.labels(function, outcome),
                self._duration.labels(function, outcome),
            )
        children[0].inc()
        children[1].observe(seconds)
