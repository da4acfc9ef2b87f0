"""What `toolmesh up` writes to stderr: JSON lines only, gRPC's C core included."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.request

import pytest

from tests.gateway.conftest import StartUp


def _stop(process: subprocess.Popen[str]) -> list[str]:
    """SIGTERM the gateway and return its stderr lines."""
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    return stderr.splitlines()


@pytest.mark.slow
def test_every_stderr_line_of_up_is_json_even_when_pods_fork(up: StartUp) -> None:
    # Two warm pods: the gateway forks templates and templates fork pods while gRPC runs,
    # which is when the C core used to print its fork_posix.cc line.
    more = "[[runtimes]]\nname = 'math'\nmodules = ['examples.arithmetic']\nmin_replicas = 2\n"
    gateway = up(runtimes=more)
    for _ in range(3):
        request = urllib.request.Request(
            f"http://127.0.0.1:{gateway.http_port}/v1/functions/add/invoke",
            data=b'{"a": 1, "b": 2}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
    lines = _stop(gateway.process)
    assert lines, "the gateway logged nothing"
    not_json, parsed = [], []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            not_json.append(line)
    assert not_json == []
    access = [entry for entry in parsed if entry["logger"] == "toolmesh.access"]
    assert [(entry["path"], entry["status"]) for entry in access] == [("/v1/functions/add/invoke", 200)] * 3
    invoked = {entry["request_id"] for entry in parsed if entry["logger"] == "toolmesh.invocations"}
    # The pods ran each call under its request's id.
    assert {entry["request_id"] for entry in access} == invoked
