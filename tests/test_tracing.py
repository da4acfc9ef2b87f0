"""When tracing is on, and that off it costs no import."""

from __future__ import annotations

import pytest

from tests.gateway.core.test_layering import loaded_after
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
