"""Runtime pods the gateway did not start (a Kubernetes Deployment's) reach the mesh with the
token both sides read from TOOLMESH_MESH_TOKEN (a Secret on a cluster)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

import toolmesh
from tests.conftest import pod_env
from tests.gateway.conftest import runtime
from toolmesh.config import GatewayConfig, KeyConfig, MeshConfig, RuntimeConfig, hash_key
from toolmesh.gateway.server import start_gateway


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def grpc_port() -> int:
    return _free_port()


def _start_pod(grpc_port: int, token: str) -> subprocess.Popen[str]:
    """A composer pod started apart from the gateway, told where the mesh is, as on a cluster."""
    env = {**pod_env(), "TOOLMESH_MESH_ADDRESS": f"127.0.0.1:{grpc_port}", "TOOLMESH_MESH_TOKEN": token}
    command = [sys.executable, "-m", "toolmesh", "runtime", "--module", "composer_tools"]
    command += ["--port", "0", "--metrics-port", "-1"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)


@pytest.fixture
def pods() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for pod in started:
        pod.kill()
        pod.communicate(timeout=10)


@pytest.mark.parametrize(("pod_token", "works"), [("shared-secret", True), ("another", False)])
async def test_pods_share_the_token_from_the_environment(
    grpc_port: int, pods: list[subprocess.Popen[str]], pod_token: str, works: bool
) -> None:
    pod = _start_pod(grpc_port, pod_token)
    pods.append(pod)
    assert pod.stdout is not None
    ready = json.loads(pod.stdout.readline())
    # The user's key may call add_then_double only; the pod's nested call to `add` passes
    # on the mesh's token, not on the user's scopes.
    config = MeshConfig(
        gateway=GatewayConfig(http_port=0, grpc_port=grpc_port),
        runtimes=(
            runtime("tools"),
            RuntimeConfig(name="composer", address=f"127.0.0.1:{ready['grpc_port']}"),
        ),
        keys=(KeyConfig(name="user", key_hash=hash_key("user-key"), scopes=("add_then_double",)),),
    )
    gateway = await start_gateway(config, environ={"TOOLMESH_MESH_TOKEN": "shared-secret"})
    try:
        async with toolmesh.AsyncClient(gateway.url, api_key="user-key") as client:
            result = await client.invoke("add_then_double", {"a": 2, "b": 3})
    finally:
        await gateway.stop(grace=0)
    if works:
        assert result.structured == 10
    else:
        assert result.is_error and result.error is not None and "unknown API key" in result.error.message
