"""Traces end to end: a real gateway and real pods export to a real OTLP/HTTP receiver on loopback."""

from __future__ import annotations

import json
import secrets
import signal
import urllib.request
from collections.abc import Iterator

import pytest

from tests.gateway.conftest import StartUp
from tests.tracing.receiver import ReceivedSpan, Receiver, running_receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as server:
        yield server


@pytest.mark.slow
def test_gateway_and_pod_spans_join_the_callers_trace(up: StartUp, receiver: Receiver) -> None:
    # composer has no pod yet (a cold start) and is reached over gRPC; its function calls
    # `add` in tools (over the socket protocol) through the gateway's Mesh service.
    composer = "[[runtimes]]\nname = 'composer'\nmodules = ['composer_tools']\ntransport = 'grpc'\n"
    gateway = up(
        runtimes=composer,
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        },
    )
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.http_port}/v1/functions/add_then_double/invoke",
        data=b'{"a": 1, "b": 2}',
        headers={"Content-Type": "application/json", "traceparent": f"00-{trace_id}-{caller_span}-01"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert json.loads(response.read())["structured"] == 6
    mcp_trace = secrets.token_hex(16)
    mcp_call = urllib.request.Request(
        f"http://127.0.0.1:{gateway.http_port}/mcp",
        data=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1}},
            }
        ).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "traceparent": f"00-{mcp_trace}-{caller_span}-01",
        },
    )
    with urllib.request.urlopen(mcp_call, timeout=30) as response:
        assert b'"isError":false' in response.read().replace(b" ", b"")
    # Stopping drains: the pods and the gateway export what they still hold.
    gateway.process.send_signal(signal.SIGTERM)
    gateway.process.communicate(timeout=30)
    receiver.wait_for("toolmesh-runtime-tools", 2)

    spans = [span for span in receiver.spans if span.trace_id == trace_id]
    by_id = {span.span_id: span for span in spans}
    services = {span.service for span in spans}
    assert services == {"toolmesh-gateway", "toolmesh-runtime-composer", "toolmesh-runtime-tools"}

    def parent(span: ReceivedSpan) -> ReceivedSpan:
        return by_id[span.parent_id]

    [http_span] = [s for s in spans if s.service == "toolmesh-gateway" and s.parent_id == caller_span]
    assert http_span.name == "POST"
    assert http_span.attributes == {
        "url.path": "/v1/functions/add_then_double/invoke",
        "http.response.status_code": 200,
    }
    names = {s.name for s in spans if s.service == "toolmesh-gateway"}
    assert {"toolmesh.queue_wait", "toolmesh.cold_start", "/toolmesh.v1.Mesh/Invoke"} <= names
    [composed] = [s for s in spans if s.service == "toolmesh-runtime-composer"]
    assert composed.name == "toolmesh.function add_then_double"
    assert parent(composed) == http_span
    [added] = [s for s in spans if s.service == "toolmesh-runtime-tools"]
    # ctx.invoke: the pod's span -> the gateway's Mesh span -> the other pod's span.
    assert parent(added).name == "/toolmesh.v1.Mesh/Invoke"
    assert parent(parent(added)) == composed

    # MCP is HTTP too: a tool call joins the trace its request names.
    mcp_spans = [span for span in receiver.spans if span.trace_id == mcp_trace]
    [mcp_http] = [s for s in mcp_spans if s.parent_id == caller_span]
    [mcp_pod] = [s for s in mcp_spans if s.service == "toolmesh-runtime-tools"]
    mcp_by_id = {span.span_id: span for span in mcp_spans}
    chain, span = [], mcp_pod
    while span.parent_id in mcp_by_id:
        span = mcp_by_id[span.parent_id]
        chain.append(span)
    # Between them, the MCP SDK's own span of the tool call (it traces with the global provider).
    assert chain[-1] == mcp_http and all(s.service == "toolmesh-gateway" for s in chain)


def test_traces_exporter_none_turns_tracing_off(up: StartUp, receiver: Receiver) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_TRACES_EXPORTER": "none"}
    gateway = up(env={**env, "OTEL_BSP_SCHEDULE_DELAY": "50"})
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.http_port}/v1/functions/add/invoke",
        data=b'{"a": 1}',
        headers={"Content-Type": "application/json", "traceparent": f"00-{'1' * 32}-{'2' * 16}-01"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
    gateway.process.send_signal(signal.SIGTERM)
    _, stderr = gateway.process.communicate(timeout=30)
    assert "tracing on" not in stderr
    assert receiver.spans == []
