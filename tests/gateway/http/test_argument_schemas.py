"""Through a real gateway and pod: nested violations named by path, hand-written schemas served as written."""

from __future__ import annotations

from typing import Any

import httpx

from tests.fixtures.schema_tools import CONTACT_SCHEMA
from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.mcp.test_endpoint import all_tools, connect


async def test_a_nested_violation_is_a_422_naming_its_path(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(runtime("schemas", "schema_tools"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        lines = [{"sku": "a", "qty": 1}, {"sku": "b", "qty": "2", "colour": "red"}]
        response = await http.post("/v1/functions/order/invoke", json={"lines": lines})
        assert response.status_code == 422
        violations = response.json()["error"]["violations"]
        assert [(v["path"], v["expected"]) for v in violations] == [
            ("lines[1].qty", "integer"),
            ("lines[1].colour", "no such key"),
        ]
        good = await http.post("/v1/functions/order/invoke", json={"lines": lines[:1]})
        assert good.json()["structured"] == 1
        listed = (await http.get("/v1/functions/order")).json()["parameters"]
        assert listed["$defs"]["Line"]["additionalProperties"] is False


async def test_a_hand_written_schema_is_published_unchanged_and_enforced(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(runtime("schemas", "schema_tools"))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        assert (await http.get("/v1/functions/contact")).json()["parameters"] == CONTACT_SCHEMA
        openai = (await http.get("/v1/tools", params={"format": "openai"})).json()
        tool: dict[str, Any] = next(t for t in openai["tools"] if t["function"]["name"] == "contact")
        assert tool["function"]["parameters"] == CONTACT_SCHEMA
        called = await http.post("/v1/functions/contact/invoke", json={"name": "Ada", "email": "ada@x"})
        assert called.json()["structured"] == {"name": "Ada", "email": "ada@x"}
        wrong = await http.post(
            "/v1/functions/contact/invoke",
            json={"name": "Ada", "via": "phone", "address": {"city": 7}, "fax": "1"},
        )
        assert wrong.status_code == 422
        found = {v["path"]: v for v in wrong.json()["error"]["violations"]}
        assert set(found) == {"phone", "address.city", "fax"}
        assert found["phone"]["message"] == "phone: missing required argument"
        assert found["address.city"]["got"] == "integer 7"
    async with connect(f"{gateway.url}/mcp") as client:
        listed = next(t for t in await all_tools(client) if t.name == "contact")
        assert listed.input_schema == CONTACT_SCHEMA
