"""gRPC servers read by reflection (`grpc_reflection`) as runtimes: a real grpcio server with
reflection in a subprocess (grpc_servers.py), a gateway serving its methods."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.conftest import StartGateway, runtime
from tests.gateway.sources.grpc_servers import compile_pets, pets_server, target
from tests.gateway.sources.mcp_servers import ServerProcess, free_port
from toolmesh.config import KeyConfig, RuntimeConfig, hash_key
from toolmesh.config.runtime_config import HeaderFromEnv


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_pets(tmp_path_factory.mktemp("pets"))


@pytest.fixture(scope="module")
def pets(generated: Path) -> Iterator[ServerProcess]:
    server = pets_server(generated).start()
    yield server
    server.kill()


async def listing(url: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        found = (await http.get("/v1/functions")).json()["functions"]
    return {f["name"]: f for f in found}


async def invoke(url: str, name: str, arguments: dict[str, Any], **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        return await http.post(f"/v1/functions/{name}/invoke", json=arguments, headers=headers)


async def test_each_unary_and_server_streaming_method_is_a_function_with_a_json_schema(
    gateway_factory: StartGateway, pets: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="pets", grpc_reflection=target(pets)))
    functions = await listing(gateway.url)
    # Upload (client-streaming) is left out, and so are health checks and reflection (the
    # operators', not the callers'); the two GetPets are told apart by their service.
    assert set(functions) == {
        "pets.Pets_GetPet",
        "pets.Admin_GetPet",
        "pets.AddPet",
        "pets.ListPets",
        "pets.WhoAmI",
    }
    assert functions["pets.ListPets"]["streaming"] is True
    assert functions["pets.AddPet"]["streaming"] is False
    add = functions["pets.AddPet"]["parameters"]
    assert add["properties"]["pet"] == {"$ref": "#/$defs/pets.v1.Pet"}
    pet = add["$defs"]["pets.v1.Pet"]["properties"]
    assert pet["id"]["type"] == ["integer", "string"]
    assert pet["kind"] == {"type": "string", "enum": ["KIND_UNSPECIFIED", "CAT", "DOG"]}
    assert pet["nicknames"] == {"type": "array", "items": {"type": "string"}}
    int32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
    assert pet["scores"] == {"type": "object", "additionalProperties": int32}
    assert pet["born"] == {"type": "string", "format": "date-time"}
    assert pet["nap"]["type"] == "string" and pet["nap"]["pattern"].endswith("s$")
    assert pet["photo"] == {"type": "string", "contentEncoding": "base64"}
    assert pet["person"]["description"] == "At most one of person, shelter (oneof owner)."
    # proto3 `optional` is no choice; doubles are numbers or the strings JSON has no number for.
    assert pet["weight"] == {"type": ["number", "string"], "pattern": "^(NaN|-?Infinity)$"}
    # The recursive Tag is written once and refers to itself.
    tag = add["$defs"]["pets.v1.Tag"]
    assert tag["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/pets.v1.Tag"}}
    assert functions["pets.Pets_GetPet"]["output_schema"]["properties"]["kind"]["enum"][1] == "CAT"


async def test_calls_answer_with_the_json_mapping_and_errors_name_the_status(
    gateway_factory: StartGateway, pets: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="pets", grpc_reflection=target(pets)))
    got = (await invoke(gateway.url, "pets.Pets_GetPet", {"id": 1})).json()
    assert got["structured"] == {
        "id": "1",
        "name": "Rex",
        "kind": "DOG",
        "nicknames": ["R"],
        "scores": {"speed": 3},
        "person": "ann",
    }
    pet = {"name": "Tom", "kind": "CAT", "born": "2020-01-02T03:04:05Z", "nap": "1.5s", "tag": {"name": "a"}}
    added = (await invoke(gateway.url, "pets.AddPet", {"pet": pet})).json()
    # Durations come back in the mapping's canonical form.
    assert added["structured"] == {**pet, "id": "2", "nap": "1.500s"}
    missing = (await invoke(gateway.url, "pets.Admin_GetPet", {"id": 7})).json()
    assert missing["is_error"] is True and missing["error"]["code"] == "function_error"
    assert missing["error"]["message"] == "/pets.v1.Admin/GetPet answered NOT_FOUND: no pet 7"
    for bad in ({"pet": {"kind": "HAMSTER"}}, {"nope": 1}, {"pet": {"born": "yesterday"}}):
        refused = await invoke(gateway.url, "pets.AddPet", bad)
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["message"].startswith("pets.AddPet: ")


async def test_a_server_streaming_method_streams_its_messages(
    gateway_factory: StartGateway, pets: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="pets", grpc_reflection=target(pets)))
    collected = (await invoke(gateway.url, "pets.ListPets", {"kind": "CAT", "limit": 3})).json()
    assert [c["json"]["name"] for c in collected["content"]] == ["pet0", "pet1", "pet2"]
    events = []
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=30) as http,
        http.stream(
            "POST",
            "/v1/functions/pets.ListPets/invoke",
            json={"kind": "DOG", "limit": 3},
            headers={"accept": "text/event-stream"},
        ) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    assert len(events) == 4, events
    # One event per message as it arrives, then the result.
    assert [e["json"]["name"] for e in events[:3]] == ["pet0", "pet1", "pet2"]
    assert events[1]["json"] == {"id": "1", "name": "pet1", "kind": "DOG"}
    assert events[3]["is_error"] is False


async def test_metadata_comes_from_the_environment_never_from_the_caller(
    gateway_factory: StartGateway, pets: ServerProcess
) -> None:
    auth = {"Authorization": HeaderFromEnv(env="PETS_TOKEN", prefix="Bearer ")}
    gateway = await gateway_factory(
        RuntimeConfig(name="pets", grpc_reflection=target(pets), headers=auth, include=("pets.v1.Pets/*",)),
        keys=[KeyConfig(name="caller", key_hash=hash_key("caller-key"), scopes=("*",))],
        environ={"PETS_TOKEN": "s3cret"},
    )
    answer = (await invoke(gateway.url, "pets.WhoAmI", {}, authorization="Bearer caller-key")).json()
    assert answer["structured"] == {"name": "Bearer s3cret"}
    # `include` kept one service: its GetPet needs no service in its name.
    async with httpx.AsyncClient(
        base_url=gateway.url, timeout=10, headers={"authorization": "Bearer caller-key"}
    ) as http:
        names = {f["name"] for f in (await http.get("/v1/functions")).json()["functions"]}
    assert names == {"pets.GetPet", "pets.AddPet", "pets.ListPets", "pets.WhoAmI"}


async def test_an_unreachable_server_names_itself_and_the_others_serve(
    gateway_factory: StartGateway, pets: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    gateway = await gateway_factory(
        runtime("tools"),
        RuntimeConfig(name="pets", grpc_reflection=target(pets)),
        RuntimeConfig(name="gone", grpc_reflection=nowhere, startup_timeout=1),
    )
    assert f"runtime 'gone': gRPC server {nowhere}: not reachable within 1 s" in caplog.text
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        assert (await http.get("/readyz")).json()["runtimes"] == {"tools": True, "pets": True, "gone": False}
        assert (await http.post("/v1/functions/add/invoke", json={"a": 2, "b": 3})).json()["structured"] == 5
    got = await invoke(gateway.url, "pets.AddPet", {"pet": {"name": "x"}})
    assert got.json()["structured"]["id"] == "2"


@pytest.mark.slow
async def test_calls_after_the_server_comes_back_succeed(
    gateway_factory: StartGateway, generated: Path
) -> None:
    server = pets_server(generated).start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="pets", grpc_reflection=target(server)))
        async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
            for round_ in range(3):
                await asyncio.to_thread(server.kill)
                down = await http.post("/v1/functions/pets.AddPet/invoke", json={"pet": {"name": "x"}})
                assert down.status_code == 503, down.text
                assert "runtime 'pets': /pets.v1.Pets/AddPet: UNAVAILABLE" in down.json()["error"]["message"]
                await asyncio.to_thread(server.start)
                deadline = asyncio.get_running_loop().time() + 5
                while True:
                    back = await http.post(
                        "/v1/functions/pets.AddPet/invoke", json={"pet": {"name": str(round_)}}
                    )
                    if back.status_code == 200 or asyncio.get_running_loop().time() > deadline:
                        break
                    await asyncio.sleep(0.1)
                assert back.status_code == 200, back.text
                assert back.json()["structured"] == {"id": "2", "name": str(round_)}
    finally:
        server.kill()


async def test_a_server_with_reflection_v1_alone_is_read_too(
    gateway_factory: StartGateway, generated: Path
) -> None:
    server = pets_server(generated, "--v1").start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="pets", grpc_reflection=target(server)))
        functions = await listing(gateway.url)
        assert "pets.AddPet" in functions
        got = (await invoke(gateway.url, "pets.Pets_GetPet", {"id": 3})).json()
        assert got["structured"]["id"] == "3"
    finally:
        server.kill()
