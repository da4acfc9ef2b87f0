"""SIGTERM to `toolmesh up` under load: calls in flight finish, new ones are refused cleanly, the
process exits 0 within the drain grace, and no runtime process (template or pod) is left behind.

The gateway runs with TMPDIR in the test's directory: each template's socket directory is made
there and is in its command line, which its forked pods share, so /proc finds them all.
"""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from tests.gateway.conftest import StartUp, Up
from toolmesh.v1 import invoke_pb2, mesh_pb2_grpc

#: Seconds each in-flight call takes; SIGTERM arrives while they run.
CALL_SECONDS = 2.0
#: In-flight calls per transport.
CALLS = 4
#: Seconds past the drain grace (or the calls' end) the gateway may take to exit.
EXIT_MARGIN = 3.0


def http_call(port: int, function: str, arguments: dict[str, object], timeout: float) -> tuple[int, str]:
    """(HTTP status, Retry-After) of one invocation; status 0 when the connection was refused."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/functions/{function}/invoke",
        data=json.dumps(arguments).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            result = json.loads(response.read())
            assert not result["is_error"], result
            return response.status, ""
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Retry-After", "")
    except urllib.error.URLError as error:
        if isinstance(error.reason, ConnectionRefusedError):
            return 0, ""
        raise


def grpc_call(port: int, function: str, arguments: dict[str, object], timeout: float) -> grpc.StatusCode:
    """The status of one invocation over the Mesh service, on a channel of its own."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return grpc_invoke(mesh_pb2_grpc.MeshStub(channel), function, arguments, timeout)


def grpc_invoke(
    mesh: mesh_pb2_grpc.MeshStub, function: str, arguments: dict[str, object], timeout: float
) -> grpc.StatusCode:
    request = invoke_pb2.InvokeRequest(function=function, arguments=json.dumps(arguments).encode())
    try:
        response = mesh.Invoke(request, timeout=timeout)
    except grpc.RpcError as error:
        return error.code()  # type: ignore[no-any-return]
    assert not response.is_error, response.error
    return grpc.StatusCode.OK


def wait_gone(up: Up, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := up.runtime_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


#: A runtime whose function calls sample_tools' `add` through the mesh after a nap.
COMPOSER = '[[runtimes]]\nname = "composer"\nmodules = ["shutdown_tools"]\nmin_replicas = 1\n'


@pytest.mark.slow
def test_sigterm_finishes_calls_in_flight_and_refuses_new_ones(up: StartUp) -> None:
    gateway = up("drain_grace = 10\n", COMPOSER)
    assert len(gateway.runtime_processes()) == 4, "two templates and their warm pods carry the marker"
    assert http_call(gateway.http_port, "add", {"a": 1}, timeout=10)[0] == 200
    channel = grpc.insecure_channel(f"127.0.0.1:{gateway.grpc_port}")
    opened = mesh_pb2_grpc.MeshStub(channel)
    assert grpc_invoke(opened, "add", {"a": 1}, timeout=10) == grpc.StatusCode.OK
    # Half the calls compose: after their nap, SIGTERM has come and they call `add` through the mesh.
    calls = [("block", {"seconds": CALL_SECONDS}), ("nap_then_add", {"seconds": CALL_SECONDS})] * (CALLS // 2)
    with channel, ThreadPoolExecutor(2 * CALLS + 3) as threads:
        http = [threads.submit(http_call, gateway.http_port, name, args, 15) for name, args in calls]
        rpc = [threads.submit(grpc_call, gateway.grpc_port, name, args, 15) for name, args in calls]
        time.sleep(0.5)  # every call has reached its pod
        gateway.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        time.sleep(0.3)
        late_http = threads.submit(http_call, gateway.http_port, "add", {"a": 1}, 5)
        late_rpc = threads.submit(grpc_call, gateway.grpc_port, "add", {"a": 1}, 5)
        late_on_open_channel = threads.submit(grpc_invoke, opened, "add", {"a": 1}, 5)
        status, retry_after = late_http.result()
        assert status == 0 or (status == 503 and retry_after), "a call after SIGTERM is refused cleanly"
        assert late_rpc.result() == grpc.StatusCode.UNAVAILABLE
        assert late_on_open_channel.result() == grpc.StatusCode.UNAVAILABLE
        assert [call.result()[0] for call in http] == [200] * CALLS, "HTTP calls in flight finish"
        assert [call.result() for call in rpc] == [grpc.StatusCode.OK] * CALLS, "gRPC calls finish"
    _, stderr = gateway.process.communicate(timeout=CALL_SECONDS + EXIT_MARGIN)
    exited = time.monotonic() - signalled
    assert gateway.process.returncode == 0, stderr
    assert exited < CALL_SECONDS + EXIT_MARGIN, f"exited {exited:.1f} s after SIGTERM"
    assert "Traceback" not in stderr
    assert not wait_gone(gateway, 1.0), "no template or pod outlives the gateway"


def http_refusal(
    port: int, function: str, arguments: dict[str, object], timeout: float
) -> tuple[int, str, str]:
    """(HTTP status, error code, Retry-After) of one invocation that is expected to fail."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/functions/{function}/invoke",
        data=json.dumps(arguments).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, "", ""
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["error"]["code"], error.headers.get("Retry-After", "")


@pytest.mark.slow
def test_calls_outliving_the_drain_grace_end_with_a_retryable_error(up: StartUp) -> None:
    grace = 1.0
    gateway = up(f"drain_grace = {grace}\n")
    with ThreadPoolExecutor(2 * CALLS) as threads:
        arguments = {"seconds": 30.0}
        http = [threads.submit(http_refusal, gateway.http_port, "block", arguments, 15) for _ in range(CALLS)]
        rpc = [threads.submit(grpc_call, gateway.grpc_port, "block", arguments, 15) for _ in range(CALLS)]
        time.sleep(0.5)
        gateway.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        assert [call.result() for call in http] == [(503, "unavailable", "1")] * CALLS, "retryable"
        assert [call.result() for call in rpc] == [grpc.StatusCode.UNAVAILABLE] * CALLS
    _, stderr = gateway.process.communicate(timeout=grace + EXIT_MARGIN + 10)
    exited = time.monotonic() - signalled
    assert gateway.process.returncode == 0, stderr
    assert exited < grace + EXIT_MARGIN, f"exited {exited:.1f} s after SIGTERM"
    assert "Traceback" not in stderr
    assert f"cut off {2 * CALLS} call(s)" in stderr
    assert not wait_gone(gateway, 1.0), "no template or pod outlives the gateway"
