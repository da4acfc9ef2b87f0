"""The protobufs real services have, through a `grpc_reflection` runtime: what a call answers is
what `google.protobuf.json_format` (the reference JSON mapping) makes of it, and the schemas
describe it (checked with jsonschema). A real grpcio server with reflection serves breadth.proto,
shapes.proto and legacy.proto (tests/fixtures/grpc_breadth, compiled at test time)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import Message

from tests.gateway.conftest import StartGateway
from tests.gateway.sources.grpc_servers import breadth_server, compile_breadth, target
from tests.gateway.sources.mcp_servers import ServerProcess
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.server import Gateway

#: Echo's arguments: every kind of field, in the canonical mapping (camelCase names).
EVERYTHING: dict[str, Any] = {
    "createdAt": "2024-02-29T12:30:00.250Z",
    "ttl": "-1.5s",
    "updateMask": "createdAt,nested.level",
    "labels": {"a": 1, "b": [True, None, "x"], "c": {"d": 2.5}},
    "anything": [1, "two", None],
    "items": [{"k": "v"}, 3],
    "maybeCount": 0,
    "maybeName": "",
    "maybeBig": "9007199254740993",
    "payload": {"@type": "type.googleapis.com/shapes.v1.Shape", "name": "boxed", "parts": [{"name": "p"}]},
    "nothing": None,
    "empty": {},
    "big": "-9223372036854775808",
    "ubig": "18446744073709551615",
    "fbig": 42,
    "sbig": "-5",
    "ratio": "NaN",
    "fraction": "-Infinity",
    "blob": "AAEC/w==",
    "byNumber": {"-3": "minus three", "7": "seven"},
    "byFlag": {"true": {"name": "yes"}, "false": {"name": "no"}},
    "colors": {"sky": "GREEN", "blood": 1},
    "shape": {"name": "chosen"},
    "maybe": 0,
    "shapes": [{"name": "a", "parts": [{"name": "b", "parts": [{"name": "c"}]}]}],
    "nested": {"level": "HIGH", "inner": {"inner": {"level": 1}}},
    "old": 3,
    "customName": "custom",
    "color": 2,
    "palette": ["RED", 2, "COLOR_UNSPECIFIED"],
    "small": 4294967295,
    "extras": [
        {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "2s"},
        {"@type": "type.googleapis.com/google.protobuf.Struct", "value": {"a": [1]}},
        {"@type": "type.googleapis.com/breadth.v1.Everything.Nested", "level": "HIGH"},
    ],
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_breadth(tmp_path_factory.mktemp("breadth"))


@pytest.fixture(scope="module")
def breadth(generated: Path) -> Iterator[ServerProcess]:
    server = breadth_server(generated).start()
    yield server
    server.kill()


@pytest.fixture(scope="module")
def pool(generated: Path) -> descriptor_pool.DescriptorPool:
    """The test's own pool of the compiled files: the reference, kept out of the default pool."""
    files = descriptor_pb2.FileDescriptorSet.FromString((generated / "descriptors.pb").read_bytes())
    own = descriptor_pool.DescriptorPool()
    for file in files.file:
        own.Add(file)
    return own


def reference(pool: descriptor_pool.DescriptorPool, name: str, arguments: dict[str, Any]) -> Any:
    """What json_format writes of `arguments` read as a `name`: what an echo must answer."""
    message: Message = message_factory.GetMessageClass(pool.FindMessageTypeByName(name))()
    json_format.ParseDict(arguments, message, descriptor_pool=pool)
    return json_format.MessageToDict(message, descriptor_pool=pool)


async def functions(gateway: Gateway) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10) as http:
        return {f["name"]: f for f in (await http.get("/v1/functions")).json()["functions"]}


async def invoke(gateway: Gateway, name: str, arguments: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        return await http.post(f"/v1/functions/{name}/invoke", json=arguments)


async def test_an_echo_answers_what_json_format_writes_and_its_schemas_describe_both(
    gateway_factory: StartGateway, breadth: ServerProcess, pool: descriptor_pool.DescriptorPool
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    expected = reference(pool, "breadth.v1.Everything", EVERYTHING)
    answer = await invoke(gateway, "b.breadth_v1_Mirror_Echo", EVERYTHING)
    assert answer.status_code == 200, answer.text
    assert answer.json()["structured"] == expected
    # Any of a type the server reflects, int64s as strings, specials, camelCase and json_name.
    assert expected["payload"]["@type"] == "type.googleapis.com/shapes.v1.Shape"
    assert expected["big"] == "-9223372036854775808" and expected["ratio"] == "NaN"
    assert expected["customName"] == "custom" and expected["byFlag"]["true"] == {"name": "yes"}
    assert expected["extras"][0] == {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "2s"}
    function = (await functions(gateway))["b.breadth_v1_Mirror_Echo"]
    jsonschema.Draft202012Validator.check_schema(function["parameters"])
    # The canonical JSON is valid arguments too; the schema names enum values (numbers are
    # taken as json_format takes them, but not advertised).
    jsonschema.validate(expected, function["parameters"])
    jsonschema.validate(expected, function["output_schema"])


async def test_arguments_by_their_proto_names_are_taken_as_json_format_takes_them(
    gateway_factory: StartGateway, breadth: ServerProcess, pool: descriptor_pool.DescriptorPool
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    arguments = {
        "created_at": "1970-01-01T00:00:01Z",
        "maybe_count": None,
        "custom": "x",
        "by_number": {"1": "a"},
    }
    answer = (await invoke(gateway, "b.breadth_v1_Mirror_Echo", arguments)).json()
    assert answer["structured"] == reference(pool, "breadth.v1.Everything", arguments)
    assert answer["structured"] == {
        "createdAt": "1970-01-01T00:00:01Z",
        "customName": "x",
        "byNumber": {"1": "a"},
    }


async def test_the_schema_names_json_fields_and_tells_the_well_known_types(
    gateway_factory: StartGateway, breadth: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    echo = (await functions(gateway))["b.breadth_v1_Mirror_Echo"]["parameters"]
    fields = echo["properties"]
    assert {"createdAt", "customName", "byFlag"} <= set(fields) and "created_at" not in fields
    assert fields["nothing"] == {"type": "null"}
    assert fields["maybeCount"]["type"] == ["integer", "null"]
    assert fields["old"]["deprecated"] is True
    assert fields["byNumber"]["propertyNames"]["pattern"] == r"^-?\d+$"
    assert fields["byFlag"]["propertyNames"] == {"enum": ["true", "false"]}
    assert fields["colors"]["additionalProperties"]["enum"] == ["COLOR_UNSPECIFIED", "RED", "GREEN"]
    assert "text, number, shape" in fields["shape"]["description"]
    assert fields["payload"]["properties"]["@type"]["type"] == "string"
    for bad in ({"ubig": "-1"}, {"small": -1}, {"fraction": "lots"}, {"nothing": 0}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, echo)


async def test_methods_are_named_apart_and_streaming_ones_left_out_are_logged(
    gateway_factory: StartGateway, breadth: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "toolmesh.sources")
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    found = await functions(gateway)
    # Three Echos: two in services both named Mirror (their packages tell them apart), one in Shapes.
    assert set(found) == {
        "b.breadth_v1_Mirror_Echo",
        "b.legacy_v1_Mirror_Echo",
        "b.Shapes_Echo",
        "b.Old",
        "b.Sleep",
        "b.Fail",
        "b.Now",
        "b.Odd",
    }
    assert found["b.Old"]["description"].startswith("Deprecated. ")
    assert "runtime 'b': gRPC method breadth.v1.Mirror/Chat is bidi-streaming: not a function" in caplog.text
    shape = (await invoke(gateway, "b.Shapes_Echo", {"name": "s"})).json()
    assert shape["structured"] == {"name": "s"}


async def test_a_well_known_type_answered_is_its_json(
    gateway_factory: StartGateway, breadth: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    now = (await functions(gateway))["b.Now"]
    assert now["output_schema"] == {"type": "string", "format": "date-time"}
    answer = (await invoke(gateway, "b.Now", {})).json()
    assert answer["structured"] == "2023-11-14T22:13:20.005Z"


async def test_proto2_required_fields_defaults_and_extensions(
    gateway_factory: StartGateway, breadth: ServerProcess, pool: descriptor_pool.DescriptorPool
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    record = (await functions(gateway))["b.legacy_v1_Mirror_Echo"]["parameters"]
    assert record["required"] == ["id"]
    assert record["properties"]["count"]["default"] == 7
    assert record["properties"]["mode"] == {"type": "string", "enum": ["SLOW", "FAST"], "default": "FAST"}
    arguments = {"id": "r1", "extra": {"info": "i"}, "[legacy.v1.tagline]": "hello", "mode": "SLOW"}
    answer = await invoke(gateway, "b.legacy_v1_Mirror_Echo", arguments)
    assert answer.status_code == 200, answer.text
    assert answer.json()["structured"] == reference(pool, "legacy.v1.Record", arguments)
    assert answer.json()["structured"]["[legacy.v1.tagline]"] == "hello"
    missing = await invoke(gateway, "b.legacy_v1_Mirror_Echo", {"count": 1})
    assert missing.status_code == 422, missing.text
    assert "id" in missing.json()["error"]["message"]


async def test_the_calls_timeout_is_the_grpc_deadline(
    gateway_factory: StartGateway, breadth: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth), timeout=0.5))
    slow = await invoke(gateway, "b.Sleep", {"value": "3s"})
    assert slow.status_code == 504, slow.text
    assert "/breadth.v1.Mirror/Sleep did not answer within 0.5 s" in slow.json()["error"]["message"]
    quick = await invoke(gateway, "b.Sleep", {"value": "0.01s"})
    assert quick.json()["structured"] == {}


async def test_a_status_names_its_code_message_and_rich_details(
    gateway_factory: StartGateway, breadth: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    plain = (await invoke(gateway, "b.Fail", {"code": 9, "message": "not now"})).json()
    assert plain["is_error"] is True
    assert plain["error"]["message"] == "/breadth.v1.Mirror/Fail answered FAILED_PRECONDITION: not now"
    rich = (await invoke(gateway, "b.Fail", {"code": 9, "message": "bad", "details": True})).json()
    message = rich["error"]["message"]
    assert message.startswith("/breadth.v1.Mirror/Fail answered FAILED_PRECONDITION: bad; details: ")
    assert '"@type":"type.googleapis.com/google.rpc.BadRequest"' in message
    assert '"fieldViolations":[{"field":"name","description":"must not be empty"}]' in message
    assert '{"@type":"type.googleapis.com/shapes.v1.Shape","name":"why"}' in message
    assert '{"@type":"type.googleapis.com/nowhere.Secret","value":"AQ=="}' in message


async def test_an_any_the_server_does_not_know_is_its_bytes_and_a_nan_in_a_struct_an_error(
    gateway_factory: StartGateway, breadth: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    odd = (await invoke(gateway, "b.Odd", {"value": "undecodable"})).json()
    assert odd["structured"] == {
        "payload": {
            "@type": "type.googleapis.com/breadth.v1.Everything",
            "text": "inside",
            "payload": {"@type": "type.googleapis.com/nowhere.Secret", "value": "CAE="},
        },
        "byFlag": {"true": {"name": "kept"}},
    }
    nan = (await invoke(gateway, "b.Odd", {"value": "nan"})).json()
    assert nan["is_error"] is True
    assert nan["error"]["message"].startswith("/breadth.v1.Mirror/Odd answered: ")
    refused = await invoke(gateway, "b.Odd", {"text": "nan"})
    assert refused.status_code == 422
    assert 'a google.protobuf.StringValue is sent as {"value": ...}' in refused.json()["error"]["message"]


async def test_an_any_of_a_type_only_the_server_knows_is_looked_up_by_reflection(
    gateway_factory: StartGateway, breadth: ServerProcess
) -> None:
    gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(breadth)))
    # No service of the server imports google/rpc/error_details.proto; the server links it.
    bad = {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "f"}]}
    echo = (await invoke(gateway, "b.breadth_v1_Mirror_Echo", {"payload": bad})).json()
    assert echo["structured"] == {"payload": bad}
    unknown = {"@type": "type.googleapis.com/nowhere.Secret"}
    refused = await invoke(gateway, "b.breadth_v1_Mirror_Echo", {"payload": unknown})
    assert refused.status_code == 422
    assert "nowhere.Secret" in refused.json()["error"]["message"]


async def test_a_server_that_goes_away_during_a_call_is_unavailable(
    gateway_factory: StartGateway, generated: Path
) -> None:
    server = breadth_server(generated).start()
    try:
        gateway = await gateway_factory(RuntimeConfig(name="b", grpc_reflection=target(server)))
        call = asyncio.create_task(invoke(gateway, "b.Sleep", {"value": "20s"}))
        await asyncio.sleep(0.5)
        await asyncio.to_thread(server.kill)
        gone = await asyncio.wait_for(call, 10)
        assert gone.status_code == 503, gone.text
        assert "runtime 'b': /breadth.v1.Mirror/Sleep: UNAVAILABLE" in gone.json()["error"]["message"]
    finally:
        server.kill()
