"""Malformed headers, clients that leave, batches against a rate limit, metrics behind a scope."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import KeyConfig, hash_key

#: Every HTTP surface that authenticates, with a body it accepts.
SURFACES = [
    ("GET", "/v1/functions", None),
    ("GET", "/v1/functions/add", None),
    ("POST", "/v1/functions/add/invoke", {"a": 1}),
    ("GET", "/v1/tools", None),
    ("POST", "/v1/tool_calls", [{"name": "add", "arguments": {"a": 1}}]),
    ("GET", "/v1/namespaces", None),
    ("POST", "/v1/route", {"prompt": "add numbers"}),
    ("POST", "/v1/execute", {"prompt": "add numbers"}),
    ("POST", "/v1/chat/completions", {"model": "m", "messages": []}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ("GET", "/metrics", None),
]


@pytest.mark.parametrize("keys", [False, True], ids=["open", "keys"])
async def test_a_non_ascii_authorization_header_is_a_401_naming_it(
    gateway_factory: StartGateway, keys: bool
) -> None:
    configured = [KeyConfig(name="k", key_hash=hash_key("secret"))] if keys else []
    gateway = await gateway_factory(keys=configured)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        for method, path, body in SURFACES:
            for value in (b"Bearer s\xffcret", "Bearer sécret".encode("latin-1")):
                response = await http.request(method, path, json=body, headers={"Authorization": value})
                assert response.status_code == 401, (path, response.text)
                error = response.json()["error"]
                param = error["data"]["param"] if path == "/mcp" else error["param"]
                assert param == "Authorization", path


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-Request-Id", b"r" * 129),
        ("X-Request-Id", b"caf\xe9"),
        ("X-Request-Id", b"a\tb"),
        ("X-Session-Id", b"s" * 129),
        ("X-Session-Id", b"\xff"),
    ],
)
async def test_a_malformed_id_header_is_a_400_naming_it(
    gateway_factory: StartGateway, header: str, value: bytes
) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        invoke = await http.post("/v1/functions/add/invoke", json={"a": 1}, headers={header: value})
        batch = await http.post(
            "/v1/tool_calls", json=[{"name": "add", "arguments": {"a": 1}}], headers={header: value}
        )
        fine = await http.post("/v1/functions/add/invoke", json={"a": 1}, headers={header: "ok-1"})
    for response in (invoke, batch):
        assert response.status_code == 400 and response.json()["error"]["param"] == header
    assert fine.status_code == 200


async def test_clients_that_leave_mid_body_are_not_errors(
    gateway_factory: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = await gateway_factory()
    caplog.set_level(logging.DEBUG, logger="toolmesh")
    for _ in range(20):
        _reader, writer = await asyncio.open_connection("127.0.0.1", gateway.http_port)
        writer.write(
            b"POST /v1/functions/add/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a": '
        )
        await writer.drain()
        await asyncio.sleep(0.01)
        writer.close()
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        assert (await http.get("/healthz")).status_code == 200
        await asyncio.sleep(0.2)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "disconnect" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_the_rate_limit_counts_calls_not_requests(gateway_factory: StartGateway) -> None:
    keys = [KeyConfig(name="slow", key_hash=hash_key("slow-key"), rate=0.01, burst=2)]
    gateway = await gateway_factory(keys=keys)
    slow = {"Authorization": "Bearer slow-key"}
    async with httpx.AsyncClient(base_url=gateway.url, headers=slow) as http:
        for _ in range(5):
            assert (await http.get("/v1/functions")).status_code == 200, "listing is free"
        batch = [{"name": "add", "arguments": {"a": i}} for i in range(64)]
        results = (await http.post("/v1/tool_calls", json=batch)).json()["results"]
        after = await http.post("/v1/functions/add/invoke", json={"a": 1})
    ran = [r for r in results if not r["is_error"]]
    refused = [r for r in results if r["is_error"]]
    assert len(ran) == 2, "a batch of 64 costs 64 calls: the burst of 2 pays for two"
    assert len(refused) == 62 and all("rate limit" in r["content"] for r in refused)
    assert after.status_code == 429 and int(after.headers["Retry-After"]) >= 1


async def test_metrics_need_a_scope_or_their_own_port(gateway_factory: StartGateway) -> None:
    keys = [
        KeyConfig(name="caller", key_hash=hash_key("caller-key")),
        KeyConfig(name="prometheus", key_hash=hash_key("prom-key"), scopes=("@metrics",)),
    ]
    gateway = await gateway_factory(runtime(), keys=keys, metrics_port=0)
    async with httpx.AsyncClient(base_url=gateway.url) as http:
        await http.post(
            "/v1/functions/add/invoke", json={"a": 1}, headers={"Authorization": "Bearer caller-key"}
        )
        anonymous = await http.get("/metrics")
        caller = await http.get("/metrics", headers={"Authorization": "Bearer caller-key"})
        scraper = await http.get("/metrics", headers={"Authorization": "Bearer prom-key"})
        scraper_calls = await http.post(
            "/v1/functions/add/invoke", json={"a": 1}, headers={"Authorization": "Bearer prom-key"}
        )
        targets = await http.get("/v1/metrics/targets", headers={"Authorization": "Bearer caller-key"})
        found = await http.get("/v1/metrics/targets", headers={"Authorization": "Bearer prom-key"})
        (pod,) = [group["labels"] for group in found.json() if group["labels"]["toolmesh_role"] == "pod"]
        pod_metrics = await http.get(pod["__metrics_path__"], headers={"Authorization": "Bearer prom-key"})
        no_pod = await http.get("/v1/metrics/pods/tools/1", headers={"Authorization": "Bearer prom-key"})
        assert gateway.metrics_port is not None
        separate = await http.get(f"http://127.0.0.1:{gateway.metrics_port}/metrics")
        keyless_targets = await http.get(f"http://127.0.0.1:{gateway.metrics_port}/v1/metrics/targets")
        rebound = await http.get(
            f"http://127.0.0.1:{gateway.metrics_port}/metrics", headers={"Host": "evil.example"}
        )
    assert anonymous.status_code == 401
    assert caller.status_code == 403 and "@metrics" in caller.json()["error"]["message"], (
        "'*' is no permission"
    )
    assert scraper.status_code == 200 and 'function="add"' in scraper.text
    assert scraper_calls.status_code == 404, "a permission scope grants no functions"
    assert separate.status_code == 200 and 'function="add"' in separate.text
    assert targets.status_code == 403
    assert pod["runtime"] == "tools" and pod_metrics.status_code == 200
    assert 'toolmesh_runtime_invocations_total{function="add",outcome="ok"}' in pod_metrics.text
    assert no_pod.status_code == 404 and "no live pod '1'" in no_pod.json()["error"]["message"]
    assert keyless_targets.status_code == 200 and len(keyless_targets.json()) == 2
    assert rebound.status_code == 403
