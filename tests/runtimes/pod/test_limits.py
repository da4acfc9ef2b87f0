"""A pod's limits on real processes: memory, the OOM score, stuck threads, the shutdown log."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from tests.conftest import PodProcess, pod_env
from toolmesh.error_shapes import from_rpc_error
from toolmesh.protocol import wire
from toolmesh.protocol.calls import REFUSED
from toolmesh.protocol.defaults import RECYCLED
from toolmesh.runtimes.functions.results import Result
from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc

StartProcess = Callable[..., PodProcess]


def call(pod: PodProcess, function: str, **arguments: Any) -> Result:
    stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(pod.address))
    request = invoke_pb2.InvokeRequest(function=function, arguments=json.dumps(arguments).encode())
    return wire.result_from_proto(stub.Invoke(request, timeout=10))


def test_a_function_past_max_memory_mb_gets_an_error_naming_the_limit_and_the_pod_serves_on(
    pod_process: StartProcess,
) -> None:
    pod = pod_process("limit_tools", args=["--max-memory-mb", "1024"])
    assert call(pod, "oom_score_adj").structured == 500, "the OOM killer picks a pod first"
    result = call(pod, "hog")
    assert result.is_error and result.error is not None
    assert result.error.code == "resource_exhausted"
    assert "max_memory_mb = 1024" in result.error.message
    # What the function allocated is released at once, not at the next garbage collection.
    assert call(pod, "vm_size").structured < 600 * 1024 * 1024
    assert call(pod, "ping").structured == pod.process.pid


def test_a_limit_below_what_the_pod_needs_stops_start_up_with_a_clear_message() -> None:
    command = [sys.executable, "-m", "toolmesh", "runtime", "--module", "limit_tools", "--port", "0"]
    done = subprocess.run(
        [*command, "--max-memory-mb", "300"], capture_output=True, text=True, env=pod_env(), timeout=30
    )
    assert done.returncode == 2
    assert "max_memory_mb = 300 is below what this pod needs" in done.stderr


def test_a_pod_with_too_many_stuck_threads_refuses_calls_and_exits_to_be_replaced(
    pod_process: StartProcess,
) -> None:
    # Two workers: one thread stuck is half of them.
    pod = pod_process("limit_tools", args=["--workers", "2", "--timeout", "0.3", "--drain-grace", "5"])
    stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(pod.address))
    in_flight = stub.Invoke.future(invoke_pb2.InvokeRequest(function="nap", arguments=b'{"seconds": 1.5}'))
    timed_out = call(pod, "stuck", seconds=3)
    assert timed_out.error is not None and timed_out.error.code == "timeout"
    with pytest.raises(grpc.RpcError) as refused:
        call(pod, "ping")
    error = from_rpc_error(refused.value)
    assert error.code == "unavailable" and error.details.get(REFUSED) is True, "safe to send elsewhere"
    assert wire.result_from_proto(in_flight.result(timeout=5)).structured == pod.process.pid, (
        "calls in flight finish before the pod goes"
    )
    code, stderr = pod.wait(timeout=10)
    assert code == RECYCLED
    assert "too many threads stuck in calls that timed out" in stderr
    assert "abandoning calls stuck in worker threads" in stderr


def test_a_pod_whose_threads_are_idle_stops_without_abandoning_any(pod_process: StartProcess) -> None:
    pod = pod_process("limit_tools")
    assert call(pod, "ping").structured == pod.process.pid  # a pool thread now exists, idle
    started = time.monotonic()
    pod.process.send_signal(signal.SIGTERM)
    code, stderr = pod.wait()
    assert code == 0 and time.monotonic() - started < 5
    assert "abandoning" not in stderr


@pytest.mark.parametrize("mib", [17, 70])
def test_an_oversized_result_is_an_error_result_naming_the_limit(pod_process: StartProcess, mib: int) -> None:
    pod = pod_process("limit_tools")
    result = call(pod, "huge", mib=mib)
    assert result.error is not None and result.error.code == "resource_exhausted"
    assert "max_result_bytes (16777216)" in result.error.message
    assert call(pod, "huge", mib=1).structured is None and not call(pod, "huge", mib=1).is_error


def test_a_generator_is_held_to_the_limit_in_total_when_collected_and_per_item_when_streamed(
    pod_process: StartProcess,
) -> None:
    pod = pod_process("limit_tools", args=["--max-result-bytes", "3145728"])  # 3 MiB
    collected = call(pod, "spill", chunks=4, mib=1)
    assert collected.error is not None and collected.error.code == "resource_exhausted"
    assert "max_result_bytes (3145728)" in collected.error.message
    stub = runtime_pb2_grpc.RuntimeStub(grpc.insecure_channel(pod.address))

    def stream(chunks: int, mib: int) -> list[invoke_pb2.InvokeStreamResponse]:
        arguments = json.dumps({"chunks": chunks, "mib": mib}).encode()
        return list(stub.InvokeStream(invoke_pb2.InvokeRequest(function="spill", arguments=arguments)))

    streamed = stream(4, 1)
    assert len(streamed) == 5 and not streamed[-1].result.is_error, "four 1 MiB items, each under the limit"
    (only,) = stream(1, 4)
    assert only.result.error.code == "resource_exhausted"
