"""The image built from ./Dockerfile serves calls: both roles run from it, as its user.

`.ci/build-image` builds it (`.ci/run` does so before the suite); these tests run it with
`buildah run --isolation chroot --network host`, so its processes listen on this machine's
loopback. Without buildah or the image they skip, or fail under TOOLMESH_REQUIRE_E2E=1.

The gateway runs the image's own ENTRYPOINT and CMD, its config mounted where the
manifests mount it, with two runtimes: pods it forks itself (as `toolmesh up` does on a
laptop) and a runtime-role process from the same image at an address (as on Kubernetes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.conftest import ROOT, missing, require_tool
from tests.gateway.pool.test_remote_runtime import free_ports
from toolmesh.deploy.names import IMAGE_WORKDIR

# Two roles start (the gateway loads the model): more than the suite's default timeout under load.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: What `.ci/build-image` tags by default.
IMAGE = os.environ.get("TOOLMESH_IMAGE", "localhost/toolmesh:ci")
#: The uid:gid the Dockerfile's USER names and the manifests' securityContext requires.
IMAGE_USER = (10001, 10001)
#: Seconds a role gets to start: the gateway loads the router's model and forks a template.
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class Image:
    buildah: str
    config: dict[str, Any]
    container: str


@dataclass(frozen=True)
class Running:
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def _buildah(buildah: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([buildah, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    """A working container of the built image (buildah runs commands in it; nothing is copied)."""
    buildah = require_tool("buildah", "Debian package buildah; .ci/run installs it")
    inspected = _buildah(buildah, "inspect", "--type", "image", IMAGE)
    if inspected.returncode != 0:
        missing(f"there is no image {IMAGE}: build it with .ci/build-image (.ci/run does)")
    config = json.loads(inspected.stdout)["OCIv1"]["config"]
    name = f"toolmesh-test-{os.getpid()}"
    made = _buildah(buildah, "from", "--pull-never", "--name", name, IMAGE)
    assert made.returncode == 0, made.stderr
    try:
        yield Image(buildah, config, name)
    finally:
        _buildah(buildah, "rm", name)


def _run(image: Image, command: list[str], log: Path, *volumes: str) -> Running:
    mounts = [arg for volume in volumes for arg in ("--volume", volume)]
    argv = [image.buildah, "run", "--isolation", "chroot", "--network", "host", *mounts]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, image.container, "--", *command], stdout=out, stderr=subprocess.STDOUT
        )
    return Running(process, log)


def _pid(running: Running, key: str, value: str) -> int | None:
    """The pid a JSON log line with `key` = `value` names (chroot isolation shares this
    pid namespace): the gateway's `ready` event, the runtime's `serving` message."""
    for line in running.text().splitlines():
        if line.startswith("{") and json.loads(line).get(key) == value:
            return int(json.loads(line)["pid"])
    return None


def _stop(running: Running, pid: int | None) -> None:
    """SIGTERM to the role itself, as the kubelet sends it (buildah would SIGKILL it)."""
    if running.process.poll() is None and pid is not None:
        os.kill(pid, signal.SIGTERM)
    try:
        running.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        running.process.kill()
        running.process.wait()


def _uid_gid(pid: int) -> tuple[int, int]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(status["Uid"].split()[0]), int(status["Gid"].split()[0])


def _wait_for(running: Running, ready: Any, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            raise AssertionError(f"{what} exited with {running.process.returncode}:\n{running.text()}")
        try:
            if ready():
                return
        except (httpx.HTTPError, grpc.RpcError):
            pass
        time.sleep(0.25)
    raise AssertionError(f"{what} did not start in {START_TIMEOUT} s:\n{running.text()}")


def _changed_since(image: Image, since: float) -> list[str]:
    """Paths in the container's filesystem whose mtime is after `since` (buildah mounts it)."""
    mounted = _buildah(image.buildah, "mount", image.container)
    assert mounted.returncode == 0, mounted.stderr
    root = Path(mounted.stdout.strip())
    try:
        return sorted(
            "/" + str(path.relative_to(root))
            for directory, dirs, files in os.walk(root)
            for path in (Path(directory, name) for name in [*dirs, *files])
            if path.lstat().st_mtime > since
        )
    finally:
        _buildah(image.buildah, "umount", image.container)


def _runtime_serving(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def test_the_image_runs_both_roles_and_serves_a_call_and_a_route(image: Image, tmp_path: Path) -> None:
    assert image.config["Entrypoint"] == ["toolmesh"]
    assert image.config["User"] == "{}:{}".format(*IMAGE_USER)
    assert image.config["WorkingDir"] == IMAGE_WORKDIR
    http_port, grpc_port, runtime_port = free_ports(3)
    started = time.time()

    # The runtime role, as deploy/'s runtime Deployment runs it (on loopback: no token needed).
    runtime = _run(
        image,
        [
            *image.config["Entrypoint"],
            "runtime",
            f"--port={runtime_port}",
            "--metrics-port=-1",
            "-m",
            "examples.weather",
        ],
        tmp_path / "runtime.log",
    )
    # The gateway role: the image's own command, with its config where the manifests mount it.
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "toolmesh.toml").write_text(
        f"""
[gateway]
host = "127.0.0.1"
http_port = {http_port}
grpc_port = {grpc_port}

[[runtimes]]
name = "forked"
modules = ["examples.arithmetic"]

[[runtimes]]
name = "remote"
address = "127.0.0.1:{runtime_port}"
modules = ["examples.weather"]
"""
    )
    gateway = None
    try:
        _wait_for(runtime, lambda: _runtime_serving(runtime_port), "the runtime role")
        (mount,) = [a for a in image.config["Cmd"] if a.endswith("/toolmesh.toml")]
        gateway = _run(
            image,
            [*image.config["Entrypoint"], *image.config["Cmd"]],
            tmp_path / "gateway.log",
            f"{etc}:{Path(mount).parent}:ro",
        )
        base = f"http://127.0.0.1:{http_port}"
        with httpx.Client(base_url=base, timeout=30) as http:
            _wait_for(gateway, lambda: _pid(gateway, "event", "ready") is not None, "the gateway role")
            assert http.get("/healthz").status_code == 200
            for role in (_pid(gateway, "event", "ready"), _pid(runtime, "msg", "serving")):
                assert role is not None and _uid_gid(role) == IMAGE_USER

            # A function in a pod the gateway forked inside the image...
            added = http.post("/v1/functions/arithmetic.add/invoke", json={"a": 2, "b": 3})
            assert added.status_code == 200, added.text
            assert added.json()["structured"] == 5
            # ...and one in the runtime-role process, through the gateway.
            forecast = http.post("/v1/functions/get_forecast/invoke", json={"city": "Paris", "days": 2})
            assert forecast.status_code == 200, forecast.text
            assert not forecast.json()["is_error"] and "Paris" in json.dumps(forecast.json())

            # The router answers from the model built into the image (a 503 would name the reason).
            routed = http.post(
                "/v1/route", json={"prompt": "will it rain in Oslo tomorrow?", "session_id": "image"}
            )
            assert routed.status_code == 200, routed.text
            assert routed.json()["match"] in {"get_forecast", "get_current_weather"}
    finally:
        if gateway is not None:
            _stop(gateway, _pid(gateway, "event", "ready"))
        _stop(runtime, _pid(runtime, "msg", "serving"))
    # Both drain and exit cleanly on SIGTERM.
    assert gateway is not None and gateway.process.returncode == 0, gateway.text()
    assert runtime.process.returncode == 0, runtime.text()
    # Nothing failed, or warned that it could not write where the image is read-only.
    assert "Traceback" not in gateway.text() + runtime.text()
    assert "W:onnxruntime" not in gateway.text()
    # What the manifests' read-only root filesystem allows: the router's embeddings and, as the
    # config's directory (the project's) is read-only, the project's data in its directory under
    # the user's data directory, all under /tmp (their emptyDir), nothing else. buildah itself
    # makes /run's contents and the config's mount point.
    changed = _changed_since(image, started)
    assert "/tmp/toolmesh/embeddings.sqlite3" in changed
    projects = [path for path in changed if path.startswith("/tmp/toolmesh/projects/")]
    assert any(path.endswith("/sessions.sqlite3") for path in projects), changed
    made_by_buildah = {"/run", "/etc", str(Path(mount).parent)}
    assert [path for path in changed if path != "/tmp" and not path.startswith("/tmp/")] == sorted(
        made_by_buildah
    )


def test_the_build_script_is_what_ci_runs() -> None:
    script = ROOT / ".ci" / "build-image"
    assert os.access(script, os.X_OK)
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index(".ci/build-image") < ci.index("make test")
