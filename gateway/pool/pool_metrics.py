"""The pool's Prometheus metrics (names and labels are part of the public contract).

    toolmesh_inflight_requests{runtime}                      gauge, calls running on the runtime's pods
    toolmesh_pending_requests{runtime}                       gauge, calls held waiting for a pod
    toolmesh_replicas{runtime,state}                         gauge, pods by state (starting, ready, draining)
    toolmesh_cold_starts_total{runtime}                      counter, calls that found no pod running
    toolmesh_cold_start_seconds{runtime}                     histogram, such a call's wait for a pod
    toolmesh_replica_start_seconds{runtime}                  histogram, asking for a pod -> it serves
    toolmesh_queue_wait_seconds{runtime}                     histogram, time calls were held
    toolmesh_pod_restarts_total{runtime,reason}              counter, pods that ended unexpectedly
    toolmesh_pod_start_failures_total{runtime}               counter, pods that failed to start
    toolmesh_template_restarts_total{runtime,reason}         counter, template processes that ended unasked
    toolmesh_pod_loop_blocks_total{runtime,function}         counter, stalls of a pod's event loop seen
                                                             by liveness pings, by the call holding it

`runtime` only takes names from the config. A pod's `reason`: `killed` (SIGKILL: by
hand or by the kernel's OOM killer, which cannot be told apart from here), `crashed`
(any other signal or exit status), `recycled` (it stopped itself: too many threads stuck
in timed-out calls), `template` (it went with its template process), `unresponsive` (the
gateway killed it for answering no liveness ping: frozen), `blocked` (the gateway replaced it
because a call's async code still blocked its event loop when the call's time limit passed).
Each pod's own metrics name the request of every stall too (runtimes/pod/telemetry.py).
A template's: `killed`, `crashed`, or `hung` (the gateway killed it for leaving a
request for a pod unanswered).
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, Metric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from toolmesh.protocol.defaults import RECYCLED

#: Pod states as the `state` label shows them.
REPLICA_STATES = ("starting", "ready", "draining")
POD_RESTART_REASONS = ("blocked", "crashed", "killed", "recycled", "template", "unresponsive")
TEMPLATE_RESTART_REASONS = ("crashed", "killed", "hung")
#: From a forked pod (milliseconds) to a fresh interpreter under load (seconds).
START_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class RuntimeLoad(Protocol):
    """What the pool gauges read from one runtime when scraped."""

    @property
    def inflight(self) -> int: ...

    @property
    def pending(self) -> int: ...

    def replica_counts(self) -> Mapping[str, int]: ...


class PoolMetrics(Collector):
    """Pool metrics: events are counted as they happen, gauges are read at scrape time."""

    def __init__(self, registry: CollectorRegistry, runtimes: Sequence[str]) -> None:
        label = ["runtime"]
        self.cold_starts = Counter(
            "toolmesh_cold_starts",
            "Calls that arrived when their runtime had no pod ready.",
            label,
            registry=registry,
        )
        self.cold_start_seconds = Histogram(
            "toolmesh_cold_start_seconds",
            "From a call arriving for a runtime with no pod ready to a pod ready to serve it.",
            label,
            buckets=START_BUCKETS,
            registry=registry,
        )
        self.replica_start_seconds = Histogram(
            "toolmesh_replica_start_seconds",
            "From asking for a new pod to the pod serving.",
            label,
            buckets=START_BUCKETS,
            registry=registry,
        )
        self.queue_wait_seconds = Histogram(
            "toolmesh_queue_wait_seconds",
            "Time calls were held waiting for a pod to take them.",
            label,
            buckets=START_BUCKETS,
            registry=registry,
        )
        self.restarts = Counter(
            "toolmesh_pod_restarts",
            "Pods that ended without being asked to, by reason (see the module docstring).",
            ["runtime", "reason"],
            registry=registry,
        )
        self.template_restarts = Counter(
            "toolmesh_template_restarts",
            "Template processes that ended without being asked to and were started again, by reason.",
            ["runtime", "reason"],
            registry=registry,
        )
        self.start_failures = Counter(
            "toolmesh_pod_start_failures",
            "Pods that failed to start (died, or too slow).",
            label,
            registry=registry,
        )
        self.loop_blocks = Counter(
            "toolmesh_pod_loop_blocks",
            "Stalls of a pod's event loop past its runtime's loop_blocked_after, by the function "
            "whose async code held it ('' for code outside any call).",
            ["runtime", "function"],
            registry=registry,
        )
        for name in runtimes:
            # Every series exists from the start, so rate() sees the first event.
            for family in (self.cold_starts, self.start_failures):
                family.labels(name)
            for reason in POD_RESTART_REASONS:
                self.restarts.labels(name, reason)
            for reason in TEMPLATE_RESTART_REASONS:
                self.template_restarts.labels(name, reason)
            for histogram in (self.cold_start_seconds, self.replica_start_seconds, self.queue_wait_seconds):
                histogram.labels(name)
        self._loads: dict[str, RuntimeLoad] = {}
        registry.register(self)

    def watch(self, runtime: str, load: RuntimeLoad) -> None:
        self._loads[runtime] = load

    def describe(self) -> Iterable[Metric]:
        return self._gauges({})

    def collect(self) -> Iterable[Metric]:
        return self._gauges(self._loads)

    @staticmethod
    def _gauges(loads: Mapping[str, RuntimeLoad]) -> list[Metric]:
        inflight = GaugeMetricFamily(
            "toolmesh_inflight_requests", "Calls running on the runtime's pods now.", labels=["runtime"]
        )
        pending = GaugeMetricFamily(
            "toolmesh_pending_requests", "Calls held waiting for a pod of the runtime.", labels=["runtime"]
        )
        replicas = GaugeMetricFamily(
            "toolmesh_replicas", "The runtime's pods by state.", labels=["runtime", "state"]
        )
        for name, load in loads.items():
            inflight.add_metric([name], load.inflight)
            pending.add_metric([name], load.pending)
            counts = load.replica_counts()
            for state in REPLICA_STATES:
                replicas.add_metric([name, state], counts.get(state, 0))
        return [inflight, pending, replicas]


def pod_exit_reason(status: int) -> str:
    """The `reason` label of toolmesh_pod_restarts_total for a pod that ended with `status`
    (negative: the signal that killed it)."""
    if status == RECYCLED:
        return "recycled"  # it stopped itself: too many threads stuck in timed-out calls
    return "killed" if status == -signal.SIGKILL else "crashed"
