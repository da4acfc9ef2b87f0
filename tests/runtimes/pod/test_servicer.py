"""A real grpc.aio pod, called over loopback: every result kind, streaming, limits, composition."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

import toolmesh
from tests.conftest import InProcessPod
from toolmesh.error_shapes import from_grpc_status
from toolmesh.protocol import wire
from toolmesh.runtimes.functions.results import Binary, Json, Result, Text
from toolmesh.v1 import function_pb2, invoke_pb2


def request(function: str, arguments: Any = None, **fields: Any) -> invoke_pb2.InvokeRequest:
    body = arguments if isinstance(arguments, bytes) else json.dumps(arguments or {}).encode()
    return invoke_pb2.InvokeRequest(function=function, arguments=body, **fields)


async def invoke(pod: InProcessPod, function: str, arguments: Any = None, **kwargs: Any) -> Result:
    return wire.result_from_proto(await pod.stub.Invoke(request(function, arguments), **kwargs))


async def rpc_error(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def test_list_functions(pod: InProcessPod) -> None:
    listing = await pod.stub.ListFunctions(function_pb2.ListFunctionsRequest())
    specs = {s.qualified_name: s for s in map(wire.spec_from_proto, listing.functions)}
    assert {"echo", "add", "count", "counter.increment"} <= set(specs)
    assert specs["add"].input_schema["properties"]["a"] == {
        "type": "integer",
        "description": "The first number.",
    }
    assert specs["add"].output_schema == {"type": "integer"}
    assert specs["count"].streaming and not specs["add"].streaming
    assert specs["sleepy"].timeout == 0.3
    # Examples travel pod -> gateway, from functions and toolset methods alike.
    assert specs["sleepy"].examples == ("wait a moment, then answer", "take a nap for 2 seconds")
    assert specs["counter.increment"].examples == ("bump the counter by 3", "count one more")
    assert specs["add"].examples == ()
    assert [n.name for n in listing.namespaces] == ["counter"]
    only = await pod.stub.ListFunctions(function_pb2.ListFunctionsRequest(namespace="counter"))
    assert [f.name for f in only.functions] == ["increment", "current"]


async def test_each_result_kind(pod: InProcessPod) -> None:
    text = await invoke(pod, "echo", {"text": "héllo"})
    assert text.content == [Text("héllo")] and text.structured_json is None and not text.is_error
    number = await invoke(pod, "add", {"a": 2, "b": 40})
    assert number.structured == 42 and number.content == [Json(b"42")]
    binary = await invoke(pod, "blob")
    assert binary.content == [Binary(b"\x89PNG\r\n\x1a\n", "image/png")]
    mixed = await invoke(pod, "mixed")
    assert mixed.content == [Text("summary"), Json(b'{"rows":2}')]
    empty = await invoke(pod, "noop")
    assert empty.content == [] and not empty.is_error


async def test_an_exception_is_an_error_result_without_traceback(pod: InProcessPod) -> None:
    result = await invoke(pod, "fail", {"message": "disk full"})
    assert result.is_error and result.error is not None
    assert result.error.code == "function_error"
    assert result.error.message == "RuntimeError: disk full"
    assert result.error.traceback == ""
    assert result.text == "RuntimeError: disk full", "the content tells a model what went wrong"


async def test_debug_mode_includes_the_traceback(pod_factory: Any) -> None:
    pod = await pod_factory(debug=True)
    result = await invoke(pod, "fail")
    assert result.error is not None
    assert "Traceback" in result.error.traceback and "sample_tools.py" in result.error.traceback


async def test_unserialisable_return_is_an_error_result(pod: InProcessPod) -> None:
    result = await invoke(pod, "not_json")
    assert result.is_error and result.error is not None
    assert "not JSON" in result.error.message


async def test_invalid_arguments_are_an_error_result_naming_each_violation(pod: InProcessPod) -> None:
    result = await invoke(pod, "add", {"a": "one", "b": 2.5, "c": 1})
    assert result.is_error and result.error is not None
    assert result.error.code == "invalid_arguments"
    assert [(v.path, v.expected) for v in result.error.violations] == [
        ("a", "integer"),
        ("b", "integer"),
        ("c", "no such argument"),
    ]
    malformed = await invoke(pod, "add", b"{oops")
    assert malformed.error is not None and malformed.error.code == "invalid_arguments"
    assert "not valid JSON" in malformed.error.message


async def test_unknown_function_is_not_found_with_suggestions(pod: InProcessPod) -> None:
    error = await rpc_error(pod.stub.Invoke(request("ad")))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    translated = from_grpc_status(error.code(), error.details() or "", error.trailing_metadata() or ())
    assert isinstance(translated, toolmesh.FunctionNotFound)
    assert translated.details["suggestions"] == ["add"]
    assert "did you mean 'add'" in translated.message


async def test_request_id_is_kept_or_made_up(pod: InProcessPod) -> None:
    given = wire.result_from_proto(await pod.stub.Invoke(request("noop", request_id="req-1", session_id="s")))
    assert given.request_id == "req-1"
    made = await invoke(pod, "noop")
    assert len(made.request_id) == 32


async def test_toolset_instances_keep_state(pod: InProcessPod) -> None:
    assert (await invoke(pod, "counter.increment")).structured == 1
    assert (await invoke(pod, "counter.increment", {"by": 5})).structured == 6
    assert (await invoke(pod, "counter.current")).structured == 6


# -- streaming ------------------------------------------------------------------------------


async def stream(pod: InProcessPod, function: str, arguments: Any = None) -> tuple[list[Any], Result]:
    items: list[Any] = []
    final = None
    async for event in pod.stub.InvokeStream(request(function, arguments)):
        if event.WhichOneof("event") == "content":
            assert final is None, "no content after the result"
            items.append(wire.content_from_proto(event.content))
        else:
            final = wire.result_from_proto(event.result)
    assert final is not None
    return items, final


async def test_sync_generator_streams_each_item(pod: InProcessPod) -> None:
    items, final = await stream(pod, "count", {"n": 3})
    assert items == [Text("line 0"), Text("line 1"), Text("line 2")]
    assert not final.is_error and final.content == []


async def test_async_generator_streams_json_items(pod: InProcessPod) -> None:
    items, _ = await stream(pod, "ticks", {"n": 2})
    assert items == [Json(b'{"tick":0}'), Json(b'{"tick":1}')]


async def test_items_arrive_while_the_generator_runs(pod: InProcessPod) -> None:
    arrivals = []
    async for _ in pod.stub.InvokeStream(request("ticks", {"n": 3, "delay": 0.1})):
        arrivals.append(time.monotonic())
    # Items are 0.1 s apart at the source; collected and sent at the end, they would arrive together.
    # (Only the spread is checked: when the first arrives depends on how busy the machine is.)
    assert arrivals[2] - arrivals[0] > 0.15, f"the items arrived together: {arrivals}"


async def test_unary_invoke_collects_a_generator(pod: InProcessPod) -> None:
    result = await invoke(pod, "count", {"n": 2})
    assert result.content == [Text("line 0"), Text("line 1")]


async def test_streaming_a_plain_function_and_an_error(pod: InProcessPod) -> None:
    items, final = await stream(pod, "echo", {"text": "x"})
    assert items == [] and final.content == [Text("x")]
    _, failed = await stream(pod, "count", {"n": "many"})
    assert failed.error is not None and failed.error.code == "invalid_arguments"


async def test_stream_timeout_keeps_the_items_sent(pod_factory: Any) -> None:
    pod = await pod_factory(timeout=0.35)
    items, final = await stream(pod, "ticks", {"n": 50, "delay": 0.1})
    assert 2 <= len(items) <= 4
    assert final.error is not None and final.error.code == "timeout"


async def test_stream_of_an_unknown_function(pod: InProcessPod) -> None:
    error = await rpc_error(stream(pod, "nope"))
    assert error.code() == grpc.StatusCode.NOT_FOUND


# -- time limits, cancellation and load ---------------------------------------------------


async def test_function_timeout_is_an_error_result(pod: InProcessPod) -> None:
    started = time.monotonic()
    result = await invoke(pod, "sleepy", {"seconds": 5})
    assert time.monotonic() - started < 2
    assert result.error is not None and result.error.code == "timeout"
    assert result.error.message == "sleepy did not finish within 0.3 s"
    assert (await invoke(pod, "sleepy", {"seconds": 0})).text == "awake"


async def test_sync_function_timeout_signals_cancellation(pod_factory: Any) -> None:
    pod = await pod_factory(timeout=0.2)
    result = await invoke(pod, "sync_sleep", {"seconds": 10})
    assert result.error is not None and result.error.code == "timeout"
    await wait_for(lambda: pod.pod.executor.inflight == 0)


async def wait_for(condition: Any, seconds: float = 3.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        await asyncio.sleep(0.02)


async def test_caller_deadline_is_enforced_and_frees_the_pod(pod: InProcessPod) -> None:
    started = time.monotonic()
    error = await rpc_error(pod.stub.Invoke(request("block", {"seconds": 5}), timeout=0.3))
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 2
    await wait_for(lambda: pod.pod.executor.inflight == 0)


async def test_cancelled_call_cancels_the_work(pod: InProcessPod) -> None:
    call = pod.stub.Invoke(request("block", {"seconds": 5}))
    await wait_for(lambda: pod.pod.executor.inflight == 1)
    call.cancel()
    await wait_for(lambda: pod.pod.executor.inflight == 0)


async def test_max_inflight_answers_resource_exhausted(pod_factory: Any) -> None:
    pod = await pod_factory(max_inflight=2)
    held = [pod.stub.Invoke(request("block", {"seconds": 1})) for _ in range(2)]
    await wait_for(lambda: pod.pod.executor.inflight == 2)
    error = await rpc_error(pod.stub.Invoke(request("noop")))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    translated = from_grpc_status(error.code(), error.details() or "", error.trailing_metadata() or ())
    assert isinstance(translated, toolmesh.Overloaded) and translated.retryable
    assert [wire.result_from_proto(r).text for r in await asyncio.gather(*held)] == ["released"] * 2
    assert not (await invoke(pod, "noop")).is_error, "capacity comes back"


async def test_sync_functions_run_concurrently_in_threads(pod: InProcessPod) -> None:
    started = time.monotonic()
    calls = [invoke(pod, "sync_sleep", {"seconds": 0.5}) for _ in range(4)]
    results = await asyncio.gather(*calls)
    assert [r.text for r in results] == ["slept"] * 4
    assert time.monotonic() - started < 1.5, "four 0.5 s sync calls should overlap (2 s one after another)"


# -- composition ----------------------------------------------------------------------------


async def test_ctx_invoke_composes_functions(pod: InProcessPod) -> None:
    assert (await invoke(pod, "double_sum", {"a": 2, "b": 3})).structured == 10
    assert (await invoke(pod, "sync_compose", {"a": 1})).structured == 101


async def test_runaway_recursion_stops_at_the_depth_limit(pod: InProcessPod) -> None:
    result = await invoke(pod, "recurse")
    assert result.error is not None and result.error.code == "function_error"
    assert result.error.message == "call depth limit (8) exceeded calling 'recurse'"


# -- health and metrics ---------------------------------------------------------------------


async def test_health_is_serving_then_not_serving_on_drain(pod_factory: Any) -> None:
    pod = await pod_factory()
    health = health_pb2_grpc.HealthStub(pod.channel)
    for service in ("", "toolmesh.v1.Runtime"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    watch = health.Watch(health_pb2.HealthCheckRequest(service="toolmesh.v1.Runtime"))
    assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
    stopping = asyncio.ensure_future(pod.pod.stop(grace=0.5))
    assert (await watch.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
    await stopping


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_count_calls_by_function_and_outcome(pod: InProcessPod) -> None:
    await invoke(pod, "add", {"a": 1})
    await invoke(pod, "add", {"a": "x"})
    await invoke(pod, "fail")
    await rpc_error(pod.stub.Invoke(request("made-up-name")))
    port = pod.pod.metrics_port
    assert port is not None
    samples = await asyncio.to_thread(scrape, port)
    total = "toolmesh_runtime_invocations_total"
    assert samples[(total, (("function", "add"), ("outcome", "ok")))] == 1
    assert samples[(total, (("function", "add"), ("outcome", "invalid_arguments")))] == 1
    assert samples[(total, (("function", "fail"), ("outcome", "error")))] == 1
    assert samples[(total, (("function", ""), ("outcome", "not_found")))] == 1
    assert not any("made-up-name" in str(key) for key in samples), "client input never becomes a label"
    count = "toolmesh_runtime_invocation_duration_seconds_count"
    assert samples[(count, (("function", "add"), ("outcome", "ok")))] == 1
    assert samples[("toolmesh_runtime_inflight_requests", ())] == 0
    assert samples[("toolmesh_runtime_functions", ())] == 19
