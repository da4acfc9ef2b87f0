"""`toolmesh runtime` as a real child process: drain on SIGTERM, reflection, logs, start-up errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from tests.conftest import PodProcess, pod_env
from toolmesh.protocol import wire
from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc

StartProcess = Callable[..., PodProcess]


def stub(pod: PodProcess) -> runtime_pb2_grpc.RuntimeStub:
    return runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(pod.address))


def request(function: str, **arguments: Any) -> invoke_pb2.InvokeRequest:
    return invoke_pb2.InvokeRequest(function=function, arguments=json.dumps(arguments).encode())


def log_lines(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_sigterm_drains_in_flight_calls_then_exits_0(pod_process: StartProcess) -> None:
    pod = pod_process(args=["--drain-grace", "5"])
    runtime = stub(pod)
    in_flight = runtime.Invoke.future(request("block", seconds=1.0))
    time.sleep(0.3)
    started = time.monotonic()
    pod.process.send_signal(signal.SIGTERM)
    refused = None
    while refused is None and time.monotonic() - started < 0.9:
        try:
            runtime.Invoke(request("noop"), timeout=1)
        except grpc.RpcError as exc:
            refused = exc
        time.sleep(0.02)
    assert refused is not None and refused.code() == grpc.StatusCode.UNAVAILABLE, "new calls are refused"
    assert wire.result_from_proto(in_flight.result(timeout=5)).text == "released", (
        "the in-flight call finished"
    )
    code, stderr = pod.wait()
    assert code == 0
    assert 0.5 < time.monotonic() - started < 4
    messages = [line["msg"] for line in log_lines(stderr)]
    assert messages.index("draining") < messages.index("stopped")


@pytest.mark.slow
@pytest.mark.parametrize("function", ["block", "stuck"])
def test_drain_grace_bounds_the_wait_for_hung_calls(pod_process: StartProcess, function: str) -> None:
    pod = pod_process(args=["--drain-grace", "0.5"])
    hung = stub(pod).Invoke.future(request(function, seconds=60))
    time.sleep(0.3)
    started = time.monotonic()
    code, _ = pod.terminate(timeout=10)
    assert code == 0
    assert time.monotonic() - started < 3
    with pytest.raises(grpc.RpcError):
        hung.result(timeout=5)


REFLECTION_CLIENT = textwrap.dedent(
    """
    import json, sys
    import grpc
    from google.protobuf import descriptor_pool, message_factory
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

    channel = grpc.insecure_channel(sys.argv[1])
    database = ProtoReflectionDescriptorDatabase(channel)
    pool = descriptor_pool.DescriptorPool(database)
    method = pool.FindServiceByName("toolmesh.v1.Runtime").methods_by_name["Invoke"]
    Request = message_factory.GetMessageClass(method.input_type)
    Response = message_factory.GetMessageClass(method.output_type)
    invoke = channel.unary_unary(
        "/toolmesh.v1.Runtime/Invoke",
        request_serializer=Request.SerializeToString,
        response_deserializer=Response.FromString,
    )
    reply = invoke(Request(function="add", arguments=b'{"a": 20, "b": 22}'))
    assert not any(name.startswith("toolmesh") for name in sys.modules), "no generated code used"
    print(json.dumps({"services": sorted(database.get_services()), "structured": reply.structured.decode()}))
    """
)


@pytest.mark.slow
def test_reflection_lets_a_client_without_generated_code_call_invoke(pod_process: StartProcess) -> None:
    pod = pod_process()
    out = subprocess.run(
        [sys.executable, "-c", REFLECTION_CLIENT, pod.address],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd="/",
        env=pod_env(),
    )
    found = json.loads(out.stdout)
    assert found["services"] == [
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        "toolmesh.v1.Runtime",
    ]
    assert found["structured"] == "42"


@pytest.mark.slow
def test_one_json_log_line_per_invocation(pod_process: StartProcess) -> None:
    pod = pod_process()
    runtime = stub(pod)
    runtime.Invoke(invoke_pb2.InvokeRequest(function="add", arguments=b'{"a": 1}', request_id="r-42"))
    runtime.Invoke(invoke_pb2.InvokeRequest(function="fail", request_id="r-43", session_id="s-1"))
    runtime.Invoke(
        invoke_pb2.InvokeRequest(function="chatty", arguments=b'{"city": "Oslo"}', request_id="r-44")
    )
    _, stderr = pod.terminate()
    (own,) = [line for line in log_lines(stderr) if line["msg"] == "looking up"]
    assert own["city"] == "Oslo" and own["request_id"] == "r-44" and own["function"] == "chatty"
    calls = {line["request_id"]: line for line in log_lines(stderr) if line["msg"] == "invocation"}
    assert calls["r-42"]["function"] == "add" and calls["r-42"]["outcome"] == "ok"
    assert calls["r-43"]["outcome"] == "error" and calls["r-43"]["session_id"] == "s-1"
    assert isinstance(calls["r-42"]["duration_ms"], float)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolmesh", *args], capture_output=True, text=True, timeout=30, env=pod_env()
    )


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("no_such_module", "module 'no_such_module' not found"),
        ("bad_tools", "invalid function name 'bad__name'"),
    ],
)
def test_a_module_that_cannot_load_stops_start_up_with_a_clear_message(module: str, message: str) -> None:
    done = run_cli("runtime", "--module", module, "--port", "0")
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_functions_command_prints_schemas_without_serving() -> None:
    done = run_cli("functions", "--module", "sample_tools", "--format", "openai", "--strict")
    assert done.returncode == 0, done.stderr
    tools = {tool["function"]["name"]: tool["function"] for tool in json.loads(done.stdout)}
    assert tools["counter__increment"]["strict"] is True
    assert tools["add"]["parameters"]["required"] == ["a", "b"]
    plain = json.loads(run_cli("functions", "--module", "sample_tools").stdout)
    assert {f["name"] for f in plain["functions"]} >= {"add", "counter.increment"}
    text = run_cli("functions", "--module", "sample_tools", "--format", "text").stdout
    assert "add(a: integer, b: integer?) -> integer\n    Add two integers." in text


@pytest.mark.slow
def test_a_pod_loads_nothing_of_the_gateway(pod_process: StartProcess) -> None:
    pod = pod_process("import_tools")
    reply = stub(pod).Invoke(request("gateway_modules"), timeout=10)
    assert wire.result_from_proto(reply).structured == []
