"""A pod with a token (TOOLMESH_POD_TOKEN) serves only callers that present it.

Real `toolmesh runtime` child processes on loopback, called directly as an attacker on the
same machine or network would, past the gateway.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import PodProcess, pod_env
from toolmesh.protocol.pod_env import POD_TOKEN_ENV
from toolmesh.runtimes.pod.isolation.pod_auth import authorized, bearer_matches
from toolmesh.v1 import function_pb2, invoke_pb2, runtime_pb2_grpc

TOKEN = "s3cret-pod-token"
GOOD = (("authorization", f"Bearer {TOKEN}"),)
BAD = (("authorization", "Bearer not-the-token"),)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (f"Bearer {TOKEN}", True),
        (f"bearer {TOKEN}", True),
        (f"Bearer {TOKEN}".encode(), True),
        (f"Bearer {TOKEN}x", False),
        (f"Basic {TOKEN}", False),
        (TOKEN, False),
        ("Bearer tökén-ünïcode", False),
        ("Bearer \udcff", False),
        (b"Bearer \xff\xfe", False),
        ("", False),
        (None, False),
    ],
)
def test_a_header_matches_only_the_exact_bearer_token(header: str | bytes | None, expected: bool) -> None:
    assert bearer_matches(header, TOKEN) is expected


def test_an_empty_token_matches_nothing() -> None:
    assert not bearer_matches("Bearer ", "")
    assert not authorized((("authorization", "Bearer "),), "")
    assert authorized((("x-other", "1"), ("Authorization", f"Bearer {TOKEN}")), TOKEN)


@pytest.fixture
def guarded(pod_process: Callable[..., PodProcess]) -> PodProcess:
    return pod_process("sample_tools", env={POD_TOKEN_ENV: TOKEN})


def _code(call: Callable[[], object]) -> grpc.StatusCode:
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def test_runtime_calls_need_the_token(guarded: PodProcess) -> None:
    with grpc.insecure_channel(guarded.address) as channel:
        stub = runtime_pb2_grpc.RuntimeStub(channel)
        listing = function_pb2.ListFunctionsRequest()
        call = invoke_pb2.InvokeRequest(function="add", arguments=b'{"a": 1, "b": 2}')
        for metadata in ((), BAD):
            assert _code(lambda m=metadata: stub.ListFunctions(listing, timeout=5, metadata=m)) == (
                grpc.StatusCode.UNAUTHENTICATED
            )
            assert _code(lambda m=metadata: stub.Invoke(call, timeout=5, metadata=m)) == (
                grpc.StatusCode.UNAUTHENTICATED
            )
            assert _code(lambda m=metadata: list(stub.InvokeStream(call, timeout=5, metadata=m))) == (
                grpc.StatusCode.UNAUTHENTICATED
            )
        assert any(f.name == "add" for f in stub.ListFunctions(listing, timeout=5, metadata=GOOD).functions)
        assert stub.Invoke(call, timeout=5, metadata=GOOD).structured == b"3"


def test_health_stays_open_for_probes(guarded: PodProcess) -> None:
    with grpc.insecure_channel(guarded.address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="toolmesh.v1.Runtime"), timeout=5
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_metrics_need_the_token(guarded: PodProcess) -> None:
    url = f"http://127.0.0.1:{guarded.metrics_port}/metrics"
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5)
        assert refused.value.code == 401
        assert b"toolmesh_runtime" not in refused.value.read()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert b"toolmesh_runtime_functions" in response.read()


def test_a_pod_without_a_token_warns_that_anyone_may_call_it(pod_process: Callable[..., PodProcess]) -> None:
    _, err = pod_process("sample_tools").terminate()
    assert "serving without authentication" in err


def test_a_pod_refuses_to_serve_the_network_without_a_token() -> None:
    command = [sys.executable, "-m", "toolmesh", "runtime", "--module", "sample_tools", "--host", "0.0.0.0"]
    done = subprocess.run(command, capture_output=True, text=True, env=pod_env(), timeout=60)
    assert done.returncode == 2
    assert "refusing to serve 0.0.0.0:50061 without authentication" in done.stderr
    assert "TOOLMESH_POD_TOKEN" in done.stderr and "--insecure" in done.stderr
