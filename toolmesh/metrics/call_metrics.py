"""``<prefix>_invocations_total`` and ``<prefix>_invocation_duration_seconds``: the call metrics
a pod (runtimes/pod/telemetry.py) and the gateway (gateway/core/metrics.py) each keep."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Metric, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

# The *_created series double the exposition for no use here (for the gateway's and the pods'
# own prometheus_client metrics too: both import this module before they make any).
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


_BOUNDS = [*(repr(float(b)) for b in BUCKETS), "+Inf"]


class _Series:
    """One (function, outcome) pair: a call count, a duration sum and bucket counts."""

    __slots__ = ("buckets", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.buckets = [0] * (len(BUCKETS) + 1)


class CallMetrics(Collector):
    """``<prefix>_invocations_total`` and ``<prefix>_invocation_duration_seconds`` by
    function and outcome; pods and the gateway each keep one.

    A custom collector rather than prometheus_client's Counter and Histogram,
    whose per-value locks cost a pod a tenth of its own work per call. It is
    lock-free because every call ends on the event loop's thread, which is
    also where the exposition is rendered.
    """

    def __init__(self, registry: CollectorRegistry, prefix: str, where: str) -> None:
        self._counter = f"{prefix}_invocations"
        self._histogram = f"{prefix}_invocation_duration_seconds"
        self._where = where
        self._series: dict[tuple[str, str], _Series] = {}
        registry.register(self)

    def observe(self, function: str, outcome: str, seconds: float) -> None:
        series = self._series.get((function, outcome))
        if series is None:
            series = self._series[(function, outcome)] = _Series()
        series.count += 1
        series.total += seconds
        series.buckets[bisect.bisect_left(BUCKETS, seconds)] += 1

    def describe(self) -> Iterable[Metric]:
        return self._families(())

    def collect(self) -> Iterable[Metric]:
        return self._families(list(self._series.items()))

    def _families(self, items: Sequence[tuple[tuple[str, str], _Series]]) -> Iterable[Metric]:
        labels = ["function", "outcome"]
        calls = CounterMetricFamily(
            self._counter, f"Calls that ended {self._where}, by function and outcome.", labels=labels
        )
        durations = HistogramMetricFamily(
            self._histogram, f"Time from a call reaching {self._where} to its answer.", labels=labels
        )
        for key, series in items:
            calls.add_metric(key, series.count)
            cumulative = list(itertools.accumulate(series.buckets))
            durations.add_metric(key, list(zip(_BOUNDS, cumulative, strict=True)), series.total)
        return [calls, durations]
