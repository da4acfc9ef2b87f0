"""tools/list, resources/list, prompts/list, resources/read and prompts/get answered on the fast
path (gateway/mcp/direct_reads.py) are, byte for byte, what the SDK answers; listings are cached
per caller scope and forgotten when the catalog changes.

As in test_direct_calls.py, the SDK's answer to the same request is got by adding an inert
`_meta` key, which the SDK ignores and the fast path leaves to the SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.mcp.test_direct_calls import ERAS, reached_sdk, wire
from toolmesh.config import KeyConfig

__all__ = ["reached_sdk"]  # the fixture, shared

READS: list[tuple[str, dict[str, Any]]] = [
    ("tools/list", {}),
    ("tools/list", {"cursor": "not ours"}),
    ("tools/list", {"query": "echo"}),
    ("resources/list", {}),
    ("prompts/list", {}),
    ("resources/read", {"uri": "mem://greeting"}),
    ("resources/read", {"uri": "mem://blob"}),
    ("resources/read", {"uri": "mem://users/ada/profile"}),
    ("resources/read", {"uri": "mem://nowhere"}),
    ("prompts/get", {"name": "greet", "arguments": {"name": "Ada ✓"}}),
    ("prompts/get", {"name": "greet", "arguments": {"name": "Ada", "tone": "rude"}}),
    ("prompts/get", {"name": "nope", "arguments": {}}),
]


async def read(
    url: str, era: str, request_id: int | str, method: str, params: dict[str, Any], inert: bool, key: str = ""
) -> httpx2.Response:
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": era,
    }
    if key:
        headers["authorization"] = f"Bearer {key}"
    meta: dict[str, Any] = {}
    if era != "2025-11-25":
        meta = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers["mcp-method"] = method
        if "name" in params:
            headers["mcp-name"] = params["name"]
        if "uri" in params:
            headers["mcp-name"] = params["uri"]
    if inert:
        meta["org.example/inert"] = True
    params = dict(params)
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, content=json.dumps(body).encode(), headers=headers)


def names(response: httpx2.Response) -> list[str]:
    data = (
        response.text
        if response.headers["content-type"] == "application/json"
        else response.text.split("data: ", 1)[1]
    )
    return [tool["name"] for tool in json.loads(data)["result"]["tools"]]


@pytest.mark.parametrize("era", ERAS)
async def test_a_direct_read_is_the_sdks_byte_for_byte(
    gateway_factory: StartGateway, reached_sdk: list[bytearray], era: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "feature_tools"))
    url = f"{gateway.url}/mcp"
    for number, (method, params) in enumerate(READS):
        for request_id in (number, f"id-{number}-ü"):  # the second time from the cache, for lists
            reached_sdk.clear()
            direct = await read(url, era, request_id, method, params, inert=False)
            taken = len(reached_sdk)
            by_sdk = await read(url, era, request_id, method, params, inert=True)
            assert len(reached_sdk) == taken + 1, (method, params)
            assert wire(direct) == wire(by_sdk), (method, params)
            if "cursor" not in params:  # a bad cursor is the SDK's to refuse
                assert taken == 0, (method, params)


@pytest.mark.parametrize("era", ERAS)
async def test_listings_are_cached_per_scope_and_forgotten_on_a_change(
    gateway_factory: StartGateway, reached_sdk: list[bytearray], era: str
) -> None:
    keys = [
        KeyConfig(name="counting", key_env="COUNTING_KEY", scopes=("counter.*",)),
        KeyConfig(name="all", key_env="ALL_KEY"),
    ]
    environ = {"COUNTING_KEY": "count-secret", "ALL_KEY": "all-secret"}
    gateway = await gateway_factory(runtime("tools", "sample_tools", "mcp_tools"), keys=keys, environ=environ)
    url = f"{gateway.url}/mcp"
    for _ in range(2):
        counting = names(await read(url, era, 1, "tools/list", {}, inert=False, key="count-secret"))
        everything = names(await read(url, era, 1, "tools/list", {}, inert=False, key="all-secret"))
        assert counting == ["counter__current", "counter__increment"]
        assert len(everything) == len(gateway.mesh.catalog) > len(counting)
        searching = names(await read(f"{url}?tools=search", era, 1, "tools/list", {}, False, "all-secret"))
        assert searching == ["search_tools", "call_tool"]
    assert reached_sdk == []
    catalog = gateway.mesh.catalog
    catalog.replace([spec for spec in catalog.specs() if spec.name != "current"])
    after = names(await read(url, era, 1, "tools/list", {}, inert=False, key="count-secret"))
    assert after == ["counter__increment"]
