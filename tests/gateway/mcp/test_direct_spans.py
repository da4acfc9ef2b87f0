"""With tracing on, a tools/call the fast path answers (or hands to the SDK mid-way) makes the spans
the SDK's path makes: the same tree of names, kinds, attributes and statuses, in the same trace;
so does a call cancelled because its client left."""

from __future__ import annotations

import json
import secrets
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway.conftest import StartUp
from tests.tracing.receiver import ReceivedSpan, Receiver, running_receiver

ERAS = ["2025-11-25", "2026-07-28"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 1, "b": 2}),  # answered by the fast path
    ("fail", {}),  # a tool error: the span's error status
    ("add", {"a": "x"}),  # refused by the pod's validation: handed to the SDK
    ("chatty", {"city": "Oslo"}),  # logs: handed to the SDK mid-way on 2025-11-25
]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as server:
        yield server


def post(port: int, era: str, name: str, arguments: dict[str, Any], inert: bool, trace: str) -> bytes:
    meta: dict[str, Any] = {}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": era,
        "traceparent": f"00-{trace}-{'1' * 16}-01",
    }
    if era == "2026-07-28":
        meta = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
    if inert:  # which the SDK ignores and the fast path leaves to the SDK
        meta["org.example/inert"] = True
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as error:
        return bytes(error.read())


def tree(spans: list[ReceivedSpan], trace: str) -> list[tuple[Any, ...]]:
    """The trace's spans as (depth, service, name, kind, attributes, status), ids masked."""
    mine = [span for span in spans if span.trace_id == trace]
    by_id = {span.span_id: span for span in mine}

    def depth(span: ReceivedSpan) -> int:
        return 0 if span.parent_id not in by_id else 1 + depth(by_id[span.parent_id])

    def attributes(span: ReceivedSpan) -> str:
        # Each call's own id differs; that it is there is what is compared.
        same = {k: "<id>" if k == "toolmesh.request_id" else v for k, v in span.attributes.items()}
        return json.dumps(same, sort_keys=True)

    rows = [(depth(s), s.service, s.name, s.kind, attributes(s), s.status) for s in mine]
    return sorted(rows)


@pytest.mark.slow
def test_the_fast_paths_spans_are_the_sdks(up: StartUp, receiver: Receiver) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    gateway = up(env=env)
    traces: list[tuple[str, str, str, bytes, bytes]] = []
    for era in ERAS:
        for name, arguments in CALLS:
            direct, by_sdk = secrets.token_hex(16), secrets.token_hex(16)
            fast = post(gateway.http_port, era, name, arguments, False, direct)
            slow = post(gateway.http_port, era, name, arguments, True, by_sdk)
            traces.append((f"{era} {name} {arguments}", direct, by_sdk, fast, slow))
    gateway.process.send_signal(signal.SIGTERM)
    gateway.process.communicate(timeout=30)
    receiver.wait_for("toolmesh-runtime-tools", 2 * len(traces))
    for label, direct, by_sdk, fast, slow in traces:
        assert fast == slow, label
        made = tree(receiver.spans, direct)
        assert made == tree(receiver.spans, by_sdk), label
        names = [row[2] for row in made]
        assert any(name.startswith("tools/call ") for name in names), (label, names)


def leave(port: int, era: str, inert: bool, trace: str) -> None:
    """POST a 5 s call of `block` and close the connection after 0.5 s (the call is cancelled)."""
    meta: dict[str, Any] = {}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": era,
        "traceparent": f"00-{trace}-{'1' * 16}-01",
    }
    if era == "2026-07-28":
        meta = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"mcp-method": "tools/call", "mcp-name": "block"}
    if inert:
        meta["org.example/inert"] = True
    params: dict[str, Any] = {"name": "block", "arguments": {"seconds": 5}}
    if meta:
        params["_meta"] = meta
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()
    head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: {len(body)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(head.encode() + b"\r\n" + body)
        time.sleep(0.5)


@pytest.mark.slow
def test_a_call_whose_client_left_makes_the_sdks_spans(up: StartUp, receiver: Receiver) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    gateway = up(env=env)
    traces: list[tuple[str, str, str]] = []
    for era in ERAS:
        direct, by_sdk = secrets.token_hex(16), secrets.token_hex(16)
        leave(gateway.http_port, era, False, direct)
        leave(gateway.http_port, era, True, by_sdk)
        traces.append((era, direct, by_sdk))
    time.sleep(1)  # the last call's cancellation
    gateway.process.send_signal(signal.SIGTERM)
    gateway.process.communicate(timeout=30)
    receiver.wait_for("toolmesh-runtime-tools", 2 * len(traces))
    for era, direct, by_sdk in traces:
        made = tree(receiver.spans, direct)
        assert made == tree(receiver.spans, by_sdk), era
        assert any(row[2] == "tools/call block" for row in made), (era, made)
