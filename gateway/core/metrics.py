"""The gateway's call metrics (names and labels are part of the public contract).

    toolmesh_invocations_total{function,outcome}             counter
    toolmesh_invocation_duration_seconds{function,outcome}   histogram, end to end at the gateway
    toolmesh_trigger_runs_total{trigger}                     counter, jobs a trigger made
    toolmesh_trigger_failures_total{trigger}                 counter, of those: failed or dead
    toolmesh_trigger_lag_messages{trigger}                   gauge, a queue trigger's messages not
                                                             yet acknowledged (unread and in flight)
    toolmesh_trigger_oldest_pending_seconds{trigger}         gauge, age of the oldest of them (0: none)

`function` only ever takes names from the catalog; calls to unknown names are not
counted, so clients cannot grow the label set. `outcome` is ok, error,
invalid_arguments, timeout, or the code of the error that stopped the call
(unavailable, overloaded, ...). `trigger` is a `[[triggers]]` name from the config. The pool's own
series are in pool/pool_metrics.py.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge

from toolmesh.metrics.call_metrics import CallMetrics
from toolmesh.protocol.calls import outcome_of
from toolmesh.runtimes.functions.results import Result


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._calls = CallMetrics(self.registry, "toolmesh", "the gateway")
        self._trigger_runs = Counter(
            "toolmesh_trigger_runs_total", "Jobs a trigger made", ["trigger"], registry=self.registry
        )
        self._trigger_failures = Counter(
            "toolmesh_trigger_failures_total",
            "Jobs a trigger made that failed or died",
            ["trigger"],
            registry=self.registry,
        )

        self._trigger_lag = Gauge(
            "toolmesh_trigger_lag_messages",
            "A queue trigger's messages not yet acknowledged (unread and in flight)",
            ["trigger"],
            registry=self.registry,
        )
        self._trigger_oldest = Gauge(
            "toolmesh_trigger_oldest_pending_seconds",
            "Age of a queue trigger's oldest message not yet acknowledged (0: none)",
            ["trigger"],
            registry=self.registry,
        )

    @staticmethod
    def outcome_of(result: Result) -> str:
        return outcome_of(result)

    def observe(self, function: str, outcome: str, seconds: float) -> None:
        self._calls.observe(function, outcome, seconds)

    def trigger_ran(self, trigger: str) -> None:
        self._trigger_runs.labels(trigger).inc()

    def trigger_failed(self, trigger: str) -> None:
        self._trigger_failures.labels(trigger).inc()

    def trigger_lag(self, trigger: str, messages: int, oldest_seconds: float | None) -> None:
        self._trigger_lag.labels(trigger).set(messages)
        self._trigger_oldest.labels(trigger).set(oldest_seconds or 0.0)

    def trigger_removed(self, trigger: str) -> None:
        """A trigger reloaded away has no backlog to report any more."""
        for gauge in (self._trigger_lag, self._trigger_oldest):
            with contextlib.suppress(KeyError):
                gauge.remove(trigger)
