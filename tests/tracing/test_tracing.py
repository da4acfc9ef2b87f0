"""When tracing is on, and that off it costs no import."""

from __future__ import annotations

import contextvars
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.core.test_layering import loaded_after
from tests.tracing.receiver import running_receiver
from toolmesh.tracing import GATEWAY_SERVICE, service_to_trace

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.mark.parametrize(
    ("environ", "service"),
    [
        ({}, None),
        (ENDPOINT, GATEWAY_SERVICE),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, GATEWAY_SERVICE),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, GATEWAY_SERVICE),
        ({**ENDPOINT, "OTEL_SERVICE_NAME": "edge"}, "edge"),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, None),
        ({**ENDPOINT, "OTEL_TRACES_EXPORTER": "console"}, None),
        ({**ENDPOINT, "OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_the_standard_variables_turn_tracing_on(environ: dict[str, str], service: str | None) -> None:
    assert service_to_trace(environ, GATEWAY_SERVICE) == service


@pytest.mark.parametrize("module", ["toolmesh.runtimes.pod.serving", "toolmesh.runtimes.pod.template"])
def test_a_pod_imports_no_opentelemetry_until_tracing_is_on(module: str) -> None:
    assert loaded_after(module, ("opentelemetry",)) == []


def test_the_gateway_imports_no_tracing_sdk_until_tracing_is_on() -> None:
    # The MCP SDK imports opentelemetry's API itself; the SDK and the exporter are ours.
    assert loaded_after("toolmesh.gateway.server", ("opentelemetry.sdk", "opentelemetry.exporter")) == []


def test_opentelemetry_s_current_context_is_read_in_one_call() -> None:
    # The fast reader every traced span and carrier use; should OpenTelemetry move its context
    # variable, the slower public call would be used, and this says so.
    from opentelemetry import context

    from toolmesh.tracing.bridge import api_context

    assert isinstance(getattr(api_context, "__self__", None), contextvars.ContextVar)
    assert api_context() is context.get_current() and not api_context()
    token = context.attach(context.set_value("key", "value"))
    try:
        assert api_context() is context.get_current() and api_context()
    finally:
        context.detach(token)


NESTING = """
import json
from opentelemetry import trace
from toolmesh import tracing

tracing.start("nesting")
caller = (("traceparent", "00-%(trace)s-%(caller)s-01"), ("tracestate", "v=1"))
with tracing.span("request", {"path": "/x"}, parent=caller, server=True):
    with trace.get_tracer("user").start_as_current_span("users-own"):
        sent_on = tracing.carrier()
        with tracing.span("inside-users") as inner:
            tracing.mark_failed(inner, "no")
    try:
        with tracing.span("raises"):
            raise KeyError("k")
    except KeyError:
        pass
    ids = tracing.context()
# The ids a local pod is sent: its span joins the trace as the W3C pairs would have it join.
with tracing.span("from-ids", parent=ids, server=True):
    pass
with tracing.span("unsampled", parent=(("traceparent", "00-%(trace)s-%(caller)s-00"),)):
    unsampled = tracing.carrier()
with tracing.span("second", parent=caller):
    manual = trace.get_tracer("user").start_span("started-not-current")
    with trace.use_span(manual, end_on_exit=True):
        via_use_span = tracing.carrier()
    after_it = tracing.carrier()
print(json.dumps([sent_on, unsampled, via_use_span, after_it, tracing.as_carrier(ids)]))
tracing.shutdown()
"""


def test_toolmesh_spans_and_api_spans_nest_both_ways(tmp_path: Path) -> None:
    trace_id, caller = "5" * 32, "6" * 16
    with running_receiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        done = subprocess.run(
            [sys.executable, "-c", NESTING % {"trace": trace_id, "caller": caller}],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    spans = {span.name: span for span in receiver.spans}
    assert set(spans) == {
        "request",
        "users-own",
        "inside-users",
        "raises",
        "second",
        "started-not-current",
        "from-ids",
    }
    assert {span.trace_id for span in spans.values()} == {trace_id}
    assert spans["request"].parent_id == caller and spans["request"].kind == 2
    assert spans["request"].trace_state == "v=1" and spans["request"].attributes == {"path": "/x"}
    assert spans["users-own"].parent_id == spans["request"].span_id
    assert spans["inside-users"].parent_id == spans["users-own"].span_id
    assert spans["inside-users"].status == (2, "no") and spans["raises"].status == (2, "KeyError")
    # What is sent on names the innermost span, whoever made it; an unsampled trace stays unsampled.
    sent_on, unsampled, via_use_span, after_it, ids_as_pairs = json.loads(done.stdout)
    users_own = f"00-{trace_id}-{spans['users-own'].span_id}-01"
    assert sent_on == [["traceparent", users_own], ["tracestate", "v=1"]]
    [[_, traceparent]] = unsampled
    assert traceparent.startswith(f"00-{trace_id}-") and traceparent.endswith("-00")
    # An API span started (not made current) inside one of toolmesh's is its child, and once
    # someone makes it current, it is what is sent on; when it ends, toolmesh's again.
    manual, second = spans["started-not-current"], spans["second"]
    assert manual.parent_id == second.span_id
    assert via_use_span == [["traceparent", f"00-{trace_id}-{manual.span_id}-01"], ["tracestate", "v=1"]]
    assert after_it == [["traceparent", f"00-{trace_id}-{second.span_id}-01"], ["tracestate", "v=1"]]
    from_ids, request = spans["from-ids"], spans["request"]
    assert (from_ids.parent_id, from_ids.trace_state, from_ids.kind) == (request.span_id, "v=1", 2)
    assert ids_as_pairs == [["traceparent", f"00-{trace_id}-{request.span_id}-01"], ["tracestate", "v=1"]]
