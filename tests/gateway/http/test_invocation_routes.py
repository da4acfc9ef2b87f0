"""`GET /v1/invocations/recent` on a real gateway with real pods: what it records, newest first,
and who sees which calls (a key its own, "@admin" and the open gateway everyone's)."""

from __future__ import annotations

import re

import httpx

from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import KeyConfig, hash_key
from toolmesh.gateway.core.recent_invocations import CAPACITY

KEYS = [
    KeyConfig(name="adder", key_hash=hash_key("adder-key"), scopes=("add",)),
    KeyConfig(name="all", key_hash=hash_key("all-key"), scopes=("*",)),
    KeyConfig(name="operator", key_hash=hash_key("operator-key"), scopes=("@admin",)),
]
PATH = "/v1/invocations/recent"
ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def calls(response: httpx.Response) -> list[tuple[str, str, str]]:
    assert response.status_code == 200, response.text
    return [(c["principal"], c["function"], c["outcome"]) for c in response.json()["invocations"]]


async def test_each_key_sees_its_own_calls_and_admin_sees_all(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", min_replicas=1), keys=KEYS)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        adder, everything = bearer("adder-key"), bearer("all-key")
        added = await http.post(
            "/v1/functions/add/invoke", json={"a": 1}, headers={**adder, "X-Request-Id": "req-1"}
        )
        assert added.json()["structured"] == 2
        await http.post("/v1/functions/echo/invoke", json={"text": "hi"}, headers=everything)
        await http.post("/v1/functions/fail/invoke", json={}, headers=everything)
        await http.post("/v1/functions/add/invoke", json={"a": "x"}, headers=everything)
        # Refused before reaching a function of the catalog: not a call, not listed.
        assert (await http.post("/v1/functions/echo/invoke", json={}, headers=adder)).status_code == 404
        assert (await http.post("/v1/functions/nope/invoke", json={}, headers=everything)).status_code == 404

        mine = await http.get(PATH, headers=adder)
        assert calls(mine) == [("adder", "add", "ok")]
        [entry] = mine.json()["invocations"]
        assert entry["request_id"] == "req-1" and ISO_TIME.match(entry["time"])
        assert entry["duration_ms"] > 0

        assert calls(await http.get(PATH, headers=everything)) == [
            ("all", "add", "invalid_arguments"),
            ("all", "fail", "error"),
            ("all", "echo", "ok"),
        ]
        assert calls(await http.get(PATH, headers=bearer("operator-key"))) == [
            ("all", "add", "invalid_arguments"),
            ("all", "fail", "error"),
            ("all", "echo", "ok"),
            ("adder", "add", "ok"),
        ]
        assert calls(await http.get(PATH + "?limit=2", headers=bearer("operator-key"))) == [
            ("all", "add", "invalid_arguments"),
            ("all", "fail", "error"),
        ]
        assert (await http.get(PATH)).status_code == 401
        for bad in ("0", "-1", "x", str(CAPACITY + 1)):
            refused = await http.get(PATH, params={"limit": bad}, headers=adder)
            assert refused.status_code == 400 and refused.json()["error"]["param"] == "limit"


async def test_the_open_gateway_lists_every_call_streamed_ones_too(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("tools", min_replicas=1))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as http:
        streamed = await http.post(
            "/v1/functions/count/invoke", json={"n": 2}, headers={"Accept": "text/event-stream"}
        )
        assert "event: result" in streamed.text
        await http.post("/v1/functions/add/invoke", json={"a": 2})
        assert calls(await http.get(PATH)) == [("anonymous", "add", "ok"), ("anonymous", "count", "ok")]
