"""The kube-scaler against a loopback HTTP server playing the Kubernetes API's scale subresource.

The fake server follows the API's rules that the scaler relies on: bearer-token
auth, `application/merge-patch+json`, a `metadata.resourceVersion` in a patch is a
precondition (409 when stale), Status objects with a `message` on errors. What it
can't show is a real API server's RBAC decisions and a real kubelet's token files;
see docs/kubernetes.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.conftest import require_tool
from toolmesh.config import ConfigError, KubeScalerConfig
from toolmesh.gateway.pool.kube_scaler import KubeScaler

NAMESPACE = "tools"
TOKEN = "token-1"
SCALE_PATH = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"


def _status(code: int, reason: str, message: str) -> JSONResponse:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message}
    return JSONResponse(body, status_code=code)


@dataclass
class FakeApiServer:
    """The scale endpoints of a few Deployments, with the API server's rules."""

    replicas: dict[str, int]
    token: str = TOKEN
    forbidden: set[str] = field(default_factory=set)
    #: Called after answering a GET: lets a test change the count "meanwhile".
    after_get: Callable[[str], None] | None = None
    resource_version: int = 1
    requests: list[tuple[str, str, dict[str, Any] | None]] = field(default_factory=list)
    url: str = ""

    def patches(self) -> list[tuple[str, dict[str, Any] | None]]:
        return [(name, body) for method, name, body in self.requests if method == "PATCH"]

    def scale(self, name: str) -> dict[str, Any]:
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": name, "namespace": NAMESPACE, "resourceVersion": str(self.resource_version)},
            "spec": {"replicas": self.replicas[name]},
            "status": {"replicas": self.replicas[name]},
        }

    async def endpoint(self, request: Request) -> Response:
        name = request.path_params["name"]
        body = json.loads(await request.body()) if request.method == "PATCH" else None
        self.requests.append((request.method, name, body))
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return _status(401, "Unauthorized", "Unauthorized")
        if name in self.forbidden or request.path_params["namespace"] != NAMESPACE:
            return _status(
                403,
                "Forbidden",
                f'deployments.apps "{name}" is forbidden: User '
                '"system:serviceaccount:tools:toolmesh-gateway" cannot get resource "deployments/scale"',
            )
        if name not in self.replicas:
            return _status(404, "NotFound", f'deployments.apps "{name}" not found')
        if request.method == "GET":
            reply = JSONResponse(self.scale(name))
            if self.after_get is not None:
                self.after_get(name)
            return reply
        if request.headers.get("content-type") != "application/merge-patch+json":
            return _status(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
        assert body is not None
        expected = body.get("metadata", {}).get("resourceVersion")
        if expected is not None and expected != str(self.resource_version):
            return _status(409, "Conflict", "the object has been modified; please apply your changes")
        self.replicas[name] = body["spec"]["replicas"]
        self.resource_version += 1
        return JSONResponse(self.scale(name))


@contextlib.asynccontextmanager
async def serve(api: FakeApiServer, **ssl: str) -> AsyncIterator[FakeApiServer]:
    app = Starlette(routes=[Route(SCALE_PATH, api.endpoint, methods=["GET", "PATCH"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, **ssl)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), "the fake API server did not start"
        await asyncio.sleep(0.01)
    scheme = "https" if ssl else "http"
    api.url = f"{scheme}://127.0.0.1:{sock.getsockname()[1]}"
    try:
        yield api
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "serviceaccount" / "token"
    path.parent.mkdir()
    path.write_text(TOKEN + "\n")
    (path.parent / "namespace").write_text(NAMESPACE)
    return path


@pytest.fixture
async def api(token_file: Path) -> AsyncIterator[FakeApiServer]:
    async with serve(FakeApiServer({"toolmesh-runtime-tools": 0, "toolmesh-runtime-busy": 3})) as running:
        yield running


@pytest.fixture
async def scaler_factory(api: FakeApiServer, token_file: Path) -> AsyncIterator[Callable[..., KubeScaler]]:
    made: list[KubeScaler] = []

    def make(min_interval: float = 60.0) -> KubeScaler:
        scaler = KubeScaler(api.url, NAMESPACE, token_file, min_interval=min_interval)
        made.append(scaler)
        return scaler

    yield make
    for scaler in made:
        await scaler.close()


async def test_wake_scales_a_runtime_at_zero_to_one(
    api: FakeApiServer, scaler_factory: Callable[..., KubeScaler]
) -> None:
    await scaler_factory().wake("tools")
    assert api.replicas["toolmesh-runtime-tools"] == 1
    # A conditional merge patch: it names the version it read, so it cannot override a newer count.
    assert api.patches() == [
        ("toolmesh-runtime-tools", {"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 1}})
    ]


async def test_a_burst_of_wakes_makes_one_patch(
    api: FakeApiServer, scaler_factory: Callable[..., KubeScaler]
) -> None:
    scaler = scaler_factory()
    await asyncio.gather(*(scaler.wake("tools") for _ in range(50)))
    await scaler.wake("tools")  # and right after, within min_interval: no request at all
    assert [method for method, _, _ in api.requests] == ["GET", "PATCH"]
    assert api.replicas["toolmesh-runtime-tools"] == 1


async def test_wake_never_changes_a_runtime_that_has_replicas(
    api: FakeApiServer, scaler_factory: Callable[..., KubeScaler]
) -> None:
    scaler = scaler_factory(min_interval=0)
    await scaler.wake("busy")
    await scaler.wake("tools")
    await scaler.wake("tools")  # idempotent: the second one finds 1 replica and leaves it
    assert api.replicas == {"toolmesh-runtime-tools": 1, "toolmesh-runtime-busy": 3}
    assert [name for name, _ in api.patches()] == ["toolmesh-runtime-tools"]


async def test_a_count_changed_meanwhile_is_left_alone(
    api: FakeApiServer, scaler_factory: Callable[..., KubeScaler], caplog: pytest.LogCaptureFixture
) -> None:
    def keda_scales_it(name: str) -> None:
        api.replicas[name] = 4
        api.resource_version += 1

    api.after_get = keda_scales_it
    with caplog.at_level(logging.INFO, "toolmesh.kube_scaler"):
        await scaler_factory().wake("tools")
    assert api.replicas["toolmesh-runtime-tools"] == 4
    assert "rescaled meanwhile" in caplog.text


async def test_refusals_are_logged_not_raised(
    api: FakeApiServer, scaler_factory: Callable[..., KubeScaler], caplog: pytest.LogCaptureFixture
) -> None:
    api.forbidden.add("toolmesh-runtime-tools")
    scaler = scaler_factory(min_interval=0)
    with caplog.at_level(logging.WARNING, "toolmesh.kube_scaler"):
        await scaler.wake("tools")
        await scaler.wake("missing")
    assert api.patches() == []
    assert "HTTP 403" in caplog.text and "cannot get resource" in caplog.text
    assert 'HTTP 404: deployments.apps "toolmesh-runtime-missing" not found' in caplog.text


async def test_the_token_is_read_again_for_each_request(
    api: FakeApiServer, scaler_factory: Callable[..., KubeScaler], token_file: Path
) -> None:
    scaler = scaler_factory(min_interval=0)
    api.token = "token-2"  # the kubelet rotated it; the old one is refused
    await scaler.wake("tools")
    assert api.replicas["toolmesh-runtime-tools"] == 0
    await asyncio.to_thread(token_file.write_text, "token-2")
    await scaler.wake("tools")
    assert api.replicas["toolmesh-runtime-tools"] == 1


async def test_an_unreachable_api_server_is_logged(
    token_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    scaler = KubeScaler(f"http://127.0.0.1:{port}", NAMESPACE, token_file, timeout=2)
    with caplog.at_level(logging.WARNING, "toolmesh.kube_scaler"):
        await scaler.wake("tools")
    await scaler.close()
    assert "could not wake runtime 'tools'" in caplog.text


def test_from_config_outside_a_pod_says_what_is_missing(token_file: Path) -> None:
    config = KubeScalerConfig(enabled=True, token_path=str(token_file))
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set"):
        KubeScaler.from_config(config, environ={})
    missing = KubeScalerConfig(enabled=True, api_url="http://127.0.0.1:1", token_path="/nonexistent/token")
    with pytest.raises(ConfigError, match="namespace from /nonexistent/namespace"):
        KubeScaler.from_config(missing, environ={})


def _self_signed(directory: Path) -> tuple[Path, Path]:
    openssl = require_tool("openssl")
    cert, key = directory / "ca.crt", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=kubernetes",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_in_cluster_over_tls_with_the_service_account_files(
    token_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What a gateway pod does: API address from the kubelet's environment, namespace, token
    and CA from the mounted service-account folder, HTTPS verified against that CA."""
    cert, key = _self_signed(token_file.parent)
    api = FakeApiServer({"toolmesh-runtime-tools": 0})
    async with serve(api, ssl_certfile=str(cert), ssl_keyfile=str(key)):
        # Not the cluster's CA (the system's): the certificate is refused, nothing is sent.
        untrusting = KubeScaler(api.url, NAMESPACE, token_file)
        with caplog.at_level(logging.WARNING, "toolmesh.kube_scaler"):
            await untrusting.wake("tools")
        await untrusting.close()
        assert "CERTIFICATE_VERIFY_FAILED" in caplog.text and api.requests == []

        port = api.url.rsplit(":", 1)[1]
        config = KubeScalerConfig(enabled=True, token_path=str(token_file), ca_path=str(cert))
        environ = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        scaler = KubeScaler.from_config(config, environ)
        assert (scaler.api_url, scaler.namespace) == (f"https://127.0.0.1:{port}", NAMESPACE)
        await scaler.wake("tools")
        await scaler.close()
    assert api.replicas["toolmesh-runtime-tools"] == 1
