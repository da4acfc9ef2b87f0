"""Request ids come back on every HTTP response, and each request leaves one access-log line."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tests.gateway.conftest import StartGateway
from toolmesh.config import KeyConfig, hash_key
from toolmesh.gateway.server import Gateway


def access_lines(gateway: Gateway, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert gateway.request_log is not None
    gateway.request_log.flush()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    return [line for line in lines if line["logger"] == "toolmesh.access"]


async def test_the_call_and_the_response_share_a_generated_request_id(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        first = await http.post("/v1/functions/add/invoke", json={"a": 1})
        second = await http.post("/v1/functions/add/invoke", json={"a": 1})
    assert first.status_code == 200
    generated = first.headers["x-request-id"]
    assert len(generated) == 32 and int(generated, 16) >= 0
    assert first.json()["request_id"] == generated
    assert second.headers["x-request-id"] != generated


async def test_a_clients_request_id_is_echoed_on_every_response(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    mine = {"X-Request-Id": "trace-me-42"}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        called = await http.post("/v1/functions/add/invoke", json={"a": 1}, headers=mine)
        missing = await http.get("/v1/nowhere", headers=mine)
        health = await http.get("/healthz", headers=mine)
        too_long = await http.post("/v1/functions/add/invoke", json={}, headers={"X-Request-Id": "x" * 129})
    assert called.json()["request_id"] == "trace-me-42"
    assert [r.headers["x-request-id"] for r in (called, missing, health)] == ["trace-me-42"] * 3
    assert too_long.status_code == 400 and "x-request-id" not in too_long.headers


async def test_one_access_line_per_request_naming_the_key(
    gateway_factory: StartGateway, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolmesh.access")
    keys = [KeyConfig(name="ci", key_hash=hash_key("ci-key"))]
    gateway = await gateway_factory(keys=keys)
    capsys.readouterr()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        ok = await http.post(
            "/v1/functions/add/invoke",
            json={"a": 2},
            headers={"Authorization": "Bearer ci-key", "X-Request-Id": "r-1"},
        )
        refused = await http.get("/v1/functions")
    lines = access_lines(gateway, capsys)
    assert [(line["method"], line["path"], line["status"]) for line in lines] == [
        ("POST", "/v1/functions/add/invoke", 200),
        ("GET", "/v1/functions", 401),
    ]
    assert lines[0]["request_id"] == "r-1" and lines[0]["principal"] == "ci"
    assert lines[0]["bytes_out"] == len(ok.content)
    assert lines[1]["principal"] == "" and lines[1]["request_id"] == refused.headers["x-request-id"]
    assert all(isinstance(line["duration_ms"], float) and line["duration_ms"] > 0 for line in lines)


async def test_access_log_off_writes_no_line_but_still_echoes_ids(
    gateway_factory: StartGateway, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolmesh.access")
    gateway = await gateway_factory(access_log=False)
    capsys.readouterr()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        response = await http.get("/healthz")
    assert "x-request-id" in response.headers
    assert access_lines(gateway, capsys) == []
