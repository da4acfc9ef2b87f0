"""The native gRPC Mesh service: the catalog, auth, limits and errors of HTTP; ctx.invoke across runtimes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import toolmesh
from tests.conftest import pod_env
from tests.gateway.conftest import StartGateway, runtime
from toolmesh.config import KeyConfig, hash_key
from toolmesh.error_shapes import from_rpc_error
from toolmesh.gateway.server import Gateway
from toolmesh.protocol import wire
from toolmesh.v1 import function_pb2, invoke_pb2, mesh_pb2, mesh_pb2_grpc


def request(function: str, **arguments: Any) -> invoke_pb2.InvokeRequest:
    return invoke_pb2.InvokeRequest(function=function, arguments=json.dumps(arguments).encode())


def mesh_stub(gateway: Gateway) -> tuple[grpc.aio.Channel, mesh_pb2_grpc.MeshStub]:
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}")
    return channel, mesh_pb2_grpc.MeshStub(channel)


async def failure(call: Any) -> toolmesh.ToolmeshError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return from_rpc_error(caught.value)


async def test_list_invoke_and_stream(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    channel, mesh = mesh_stub(gateway)
    async with channel:
        listing = await mesh.ListFunctions(function_pb2.ListFunctionsRequest())
        runtimes = {f.name: f.runtime for f in listing.functions}
        assert runtimes["add"] == "tools" and "increment" in runtimes
        counter = await mesh.ListFunctions(function_pb2.ListFunctionsRequest(namespace="counter"))
        assert [f.name for f in counter.functions] == ["increment", "current"]
        assert [n.name for n in counter.namespaces] == ["counter"]
        result = wire.result_from_proto(await mesh.Invoke(request("add", a=20, b=22)))
        assert result.structured == 42
        by_tool_name = wire.result_from_proto(await mesh.Invoke(request("counter__increment")))
        assert by_tool_name.structured == 1
        events = [event async for event in mesh.InvokeStream(request("count", n=3))]
        assert [e.content.text for e in events[:-1]] == ["line 0", "line 1", "line 2"]
        assert events[-1].WhichOneof("event") == "result"
        failed = wire.result_from_proto(await mesh.Invoke(request("fail")))
        assert failed.is_error and failed.error is not None and failed.error.code == "function_error"


async def test_errors_map_to_status_codes_from_the_same_table(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(call_timeout=0.3)
    channel, mesh = mesh_stub(gateway)
    async with channel:
        invalid = await failure(mesh.Invoke(request("add", a="x")))
        assert isinstance(invalid, toolmesh.InvalidArguments)
        assert invalid.violations[0].path == "a"
        missing = await failure(mesh.Invoke(request("ad")))
        assert isinstance(missing, toolmesh.FunctionNotFound) and missing.details["suggestions"] == ["add"]
        slow = await failure(mesh.Invoke(request("block", seconds=5)))
        assert isinstance(slow, toolmesh.FunctionTimeout)
        route = await failure(mesh.Route(mesh_pb2.RouteRequest(prompt="weather in Paris")))
        assert isinstance(route, toolmesh.Unavailable) and "disabled" in route.message


async def test_scopes_and_rate_limits_hold_on_grpc(gateway_factory: StartGateway) -> None:
    keys = [
        KeyConfig(name="narrow", key_hash=hash_key("narrow-key"), scopes=("add",)),
        KeyConfig(name="slow", key_hash=hash_key("slow-key"), rate=0.5, burst=1),
    ]
    gateway = await gateway_factory(runtime(), keys=keys)
    channel, mesh = mesh_stub(gateway)
    narrow = (("authorization", "Bearer narrow-key"),)
    async with channel:
        anonymous = await failure(mesh.ListFunctions(function_pb2.ListFunctionsRequest()))
        assert isinstance(anonymous, toolmesh.Unauthenticated)
        listing = await mesh.ListFunctions(function_pb2.ListFunctionsRequest(), metadata=narrow)
        assert [f.name for f in listing.functions] == ["add"]
        denied = await failure(mesh.Invoke(request("echo", text="x"), metadata=narrow))
        assert isinstance(denied, toolmesh.FunctionNotFound), "out of scope looks like unknown"
        ok = await mesh.Invoke(request("add", a=1), metadata=narrow)
        assert wire.result_from_proto(ok).structured == 2
        slow = (("authorization", "Bearer slow-key"),)
        for _ in range(3):
            await mesh.ListFunctions(function_pb2.ListFunctionsRequest(), metadata=slow)  # free
        await mesh.Invoke(request("noop"), metadata=slow)
        limited = await failure(mesh.Invoke(request("noop"), metadata=slow))
        assert isinstance(limited, toolmesh.RateLimited) and limited.retry_after is not None


async def test_health_on_the_grpc_port(gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    channel, _ = mesh_stub(gateway)
    async with channel:
        health = health_pb2_grpc.HealthStub(channel)
        reply = await health.Check(health_pb2.HealthCheckRequest(service="toolmesh.v1.Mesh"))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


REFLECTION_CLIENT = textwrap.dedent(
    """
    import sys
    import grpc
    from google.protobuf import descriptor_pool, message_factory
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    channel = grpc.insecure_channel(sys.argv[1])
    pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    method = pool.FindServiceByName("toolmesh.v1.Mesh").methods_by_name["Invoke"]
    Request = message_factory.GetMessageClass(method.input_type)
    Response = message_factory.GetMessageClass(method.output_type)
    invoke = channel.unary_unary("/toolmesh.v1.Mesh/Invoke", request_serializer=Request.SerializeToString,
                                 response_deserializer=Response.FromString)
    reply = invoke(Request(function="add", arguments=b'{"a": 40, "b": 2}'))
    assert not any(name.startswith("toolmesh") for name in sys.modules)
    print(reply.structured.decode())
    """
)


async def test_a_reflection_client_without_generated_code_calls_mesh_invoke(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory()
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", REFLECTION_CLIENT, f"127.0.0.1:{gateway.grpc_port}"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
        env=pod_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42"


async def test_ctx_invoke_reaches_functions_on_another_runtime(gateway_factory: StartGateway) -> None:
    """Keys are configured, so the pods' calls prove the mesh's internal token works."""
    keys = [
        KeyConfig(name="user", key_hash=hash_key("user-key"), scopes=("add_then_double", "shout", "call_*"))
    ]
    gateway = await gateway_factory(runtime("tools"), runtime("composer", "composer_tools"), keys=keys)
    channel, mesh = mesh_stub(gateway)
    user = (("authorization", "Bearer user-key"),)
    async with channel:
        doubled = wire.result_from_proto(
            await mesh.Invoke(request("add_then_double", a=2, b=3), metadata=user)
        )
        assert doubled.structured == 10
        shouted = wire.result_from_proto(await mesh.Invoke(request("shout", text="hi"), metadata=user))
        assert shouted.text == "HI"
        missing = wire.result_from_proto(await mesh.Invoke(request("call_missing"), metadata=user))
        assert missing.is_error and missing.error is not None
        assert "no function named 'no_such_function'" in missing.error.message


async def test_invoke_stream_carries_the_log_records_and_progress_asked_for(
    gateway_factory: StartGateway,
) -> None:
    gateway = await gateway_factory(runtime("tools", "log_tools"))
    channel, mesh = mesh_stub(gateway)
    async with channel:
        asked = request("levels")
        asked.log_level = 30
        events = [event async for event in mesh.InvokeStream(asked)]
        reporting = request("progress", count=2)
        reporting.progress = True
        reports = [event async for event in mesh.InvokeStream(reporting)]
        quiet = [event async for event in mesh.InvokeStream(request("levels"))]
    logged = [e.call_event.log for e in events if e.WhichOneof("event") == "call_event"]
    assert [(r.level, r.message) for r in logged] == [
        (30, "running low on coffee"),
        (40, "failed once"),
        (50, "on fire"),
    ]
    assert all(r.logger == "levels" for r in logged)
    assert events[-1].WhichOneof("event") == "result"
    progress = [wire.event_from_proto(e.call_event) for e in reports[:-1]]
    assert [(p.progress, p.total, p.message) for p in progress] == [(1, 2, "step 1"), (2, 2, "step 2")]  # type: ignore[union-attr]
    assert [e.WhichOneof("event") for e in quiet] == ["result"]
