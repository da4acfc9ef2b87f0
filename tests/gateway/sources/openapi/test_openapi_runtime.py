"""OpenAPI runtimes end to end: a real REST service on uvicorn, a gateway serving its operations."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.sources.openapi.shop import DOCUMENT, LONG_OPERATION_ID, serve_shop
from toolmesh.config import KeyConfig, RouterConfig, RuntimeConfig, hash_key
from toolmesh.config.runtime_config import HeaderFromEnv


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    with serve_shop() as url:
        yield url


@pytest.fixture
def document(tmp_path: Path) -> Path:
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(DOCUMENT))
    return path


def shop(document: Path, base_url: str, **settings: Any) -> RuntimeConfig:
    return RuntimeConfig(
        name="shop", openapi=str(document), base_url=base_url, exclude=("admin",), **settings
    )


async def listing(url: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        found = (await http.get("/v1/functions")).json()["functions"]
    return {f["name"]: f for f in found}


async def invoke(url: str, name: str, arguments: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        return await http.post(f"/v1/functions/{name}/invoke", json=arguments, headers=headers)


async def test_each_operation_is_a_function_with_one_input_schema(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    gateway = await gateway_factory(shop(document, shop_url))
    functions = await listing(gateway.url)
    long_name = next(name for name in functions if name.startswith("shop.getTheWholeCategoryTree"))
    assert set(functions) == {"shop.listPets", "shop.create_pet", "shop.getPet", "shop.get_whoami", long_name}
    # Shortened so that the tool name "shop__..." fits OpenAI's 64 characters, and still unique.
    assert len(long_name.replace(".", "__")) == 64 and long_name != f"shop.{LONG_OPERATION_ID[:58]}"
    get_pet = functions["shop.getPet"]
    assert get_pet["description"] == "One pet by id."
    assert get_pet["annotations"]["read_only"] is True
    assert get_pet["parameters"]["properties"].keys() == {"petId", "X-Asked-By"}
    assert get_pet["parameters"]["required"] == ["petId"]
    # The JSON body's properties sit beside the parameters; the enum and `nullable` are JSON Schema.
    create = functions["shop.create_pet"]["parameters"]
    assert create["properties"]["nickname"] == {"type": ["string", "null"]}
    assert create["properties"]["kind"] == {"$ref": "#/$defs/Kind"}
    assert create["$defs"]["Kind"] == {"type": "string", "enum": ["cat", "dog"]}
    assert sorted(create["required"]) == ["kind", "name"]
    # The recursive schema is written once and refers to itself.
    tree = functions[long_name]["output_schema"]
    assert tree["type"] == "object" and tree["$ref"] == "#/$defs/Category"
    assert tree["$defs"]["Category"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    assert functions["shop.listPets"]["parameters"]["properties"]["limit"]["description"] == "At most."


async def test_calls_reach_the_service_and_answer_with_its_json(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    gateway = await gateway_factory(shop(document, shop_url))
    pet = (await invoke(gateway.url, "shop.getPet", {"petId": 1, "X-Asked-By": "tests"})).json()
    assert pet["is_error"] is False
    assert pet["structured"] == {"id": 1, "name": "Rex", "kind": "dog", "nickname": None, "asked_by": "tests"}
    pets = (await invoke(gateway.url, "shop__listPets", {"kind": "cat", "limit": 5})).json()
    assert pets["structured"] == []
    created = (await invoke(gateway.url, "shop.create_pet", {"name": "Tom", "kind": "cat"})).json()
    assert created["structured"] == {"id": 2, "name": "Tom", "kind": "cat", "nickname": None}
    functions = await listing(gateway.url)
    long_name = next(name for name in functions if name.startswith("shop.getTheWhole"))
    tree = (await invoke(gateway.url, long_name, {"categoryId": 3})).json()
    assert tree["structured"]["children"][0]["id"] == 30


async def test_an_error_answer_is_a_function_error_naming_status_and_body(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    gateway = await gateway_factory(shop(document, shop_url))
    response = await invoke(gateway.url, "shop.getPet", {"petId": 7})
    assert response.status_code == 200
    body = response.json()
    assert body["is_error"] is True and body["error"]["code"] == "function_error"
    assert body["error"]["message"] == 'GET /pets/{petId} answered 404 Not Found: {"error":"no pet 7"}'
    missing = await invoke(gateway.url, "shop.getPet", {"pet": 7})
    assert missing.status_code == 422
    assert "missing argument 'petId'; unknown argument 'pet'" in missing.json()["error"]["message"]


async def test_a_3_1_document_read_from_a_url_names_the_service_itself(
    gateway_factory: StartGateway, shop_url: str
) -> None:
    document_url = shop_url.removesuffix("/api") + "/openapi.json"
    gateway = await gateway_factory(RuntimeConfig(name="shop", openapi=document_url))
    functions = await listing(gateway.url)
    assert functions["shop.create_pet"]["parameters"]["properties"]["nickname"] == {
        "type": ["string", "null"]
    }
    pet = (await invoke(gateway.url, "shop.getPet", {"petId": 1})).json()
    assert pet["structured"]["name"] == "Rex"


async def test_a_slow_service_is_a_timeout_after_the_runtimes_limit(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    gateway = await gateway_factory(
        RuntimeConfig(name="shop", openapi=str(document), base_url=shop_url, timeout=0.3)
    )
    response = await invoke(gateway.url, "shop.slow", {"seconds": 2})
    assert response.status_code == 504
    assert response.json()["error"]["message"] == "GET /slow did not answer within 0.3 s"
    assert (await invoke(gateway.url, "shop.slow", {"seconds": 0})).json()["structured"] == {"slept": True}


async def test_headers_come_from_the_environment_never_from_the_caller(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    auth = {"Authorization": HeaderFromEnv(env="SHOP_TOKEN", prefix="Bearer ")}
    gateway = await gateway_factory(
        shop(document, shop_url, headers=auth),
        keys=[KeyConfig(name="caller", key_hash=hash_key("caller-key"), scopes=("*",))],
        environ={"SHOP_TOKEN": "s3cret"},
    )
    response = await invoke(gateway.url, "shop.get_whoami", {}, authorization="Bearer caller-key")
    assert response.json()["structured"] == {"authorization": "Bearer s3cret"}


async def test_mcp_clients_list_and_call_the_operations(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    gateway = await gateway_factory(shop(document, shop_url, include=("pets",)))
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{gateway.url}/mcp", http_client=http)) as client,
    ):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"shop__listPets", "shop__create_pet", "shop__getPet"}
        assert tools["shop__getPet"].input_schema["required"] == ["petId"]
        result = await client.call_tool("shop__getPet", {"petId": 1})
    assert not result.is_error
    assert result.structured_content is not None and result.structured_content["name"] == "Rex"


async def test_the_router_finds_an_operation(
    gateway_factory: StartGateway, document: Path, shop_url: str, router_cache: Path, tmp_path: Path
) -> None:
    gateway = await gateway_factory(
        shop(document, shop_url), router=RouterConfig(cache_dir=router_cache, data_dir=tmp_path)
    )
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        answer = (await http.post("/v1/route", json={"prompt": "add a new pet to the shop", "k": 3})).json()
    assert answer["candidates"][0]["name"] == "shop.create_pet"


async def test_a_broken_source_names_itself_and_the_others_still_serve(
    gateway_factory: StartGateway,
    document: Path,
    shop_url: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"swagger": "2.0", "paths": {}}))
    gateway = await gateway_factory(
        runtime("tools"),
        RuntimeConfig(name="invalid", openapi=str(invalid), base_url=shop_url),
        RuntimeConfig(name="missing", openapi=str(tmp_path / "nowhere.yaml"), base_url=shop_url),
        # A service that is not there: its document reads, its calls cannot go out.
        RuntimeConfig(name="down", openapi=str(document), base_url="http://127.0.0.1:9"),
    )
    assert "runtime 'invalid': OpenAPI document" in caplog.text and "a Swagger 2.0 document" in caplog.text
    assert "runtime 'missing'" in caplog.text and "nowhere.yaml" in caplog.text
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        ready = (await http.get("/readyz")).json()["runtimes"]
        assert ready == {"tools": True, "invalid": False, "missing": False, "down": True}
        added = (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3})).json()
        assert added["structured"] == 5
        down = await http.post("/v1/functions/down.getPet/invoke", json={"petId": 1})
    assert down.status_code == 503
    assert "runtime 'down': GET /pets/{petId} failed" in down.json()["error"]["message"]


async def test_a_reload_reads_the_document_again_and_a_broken_one_keeps_the_old(
    gateway_factory: StartGateway, document: Path, shop_url: str
) -> None:
    gateway = await gateway_factory(shop(document, shop_url))
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        fewer = {**DOCUMENT, "paths": {"/whoami": DOCUMENT["paths"]["/whoami"]}}
        await asyncio.to_thread(document.write_text, json.dumps(fewer))
        reloaded = await http.post("/v1/admin/reload", json={"runtime": "shop"})
        assert reloaded.status_code == 200, reloaded.text
        assert set(await listing(gateway.url)) == {"shop.get_whoami"}
        await asyncio.to_thread(document.write_text, "openapi: [")
        broken = await http.post("/v1/admin/reload", json={"runtime": "shop"})
        assert "not JSON or YAML" in broken.text
        assert set(await listing(gateway.url)) == {"shop.get_whoami"}
        assert (await invoke(gateway.url, "shop.get_whoami", {})).json()["is_error"] is False
