"""What functions print reaches the log framed, attributed to its call, and bounded.

Real `toolmesh runtime` child processes; their stderr is read back as the gateway's log
would be: every line must be a JSON object.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.conftest import pod_env
from toolmesh.runtimes.pod.isolation.call_output import PER_CALL_BYTES
from toolmesh.runtimes.pod.isolation.output_pipe import BYTES_PER_SECOND
from toolmesh.v1 import invoke_pb2, runtime_pb2_grpc


@dataclass
class LoggedPod:
    """A pod whose stderr goes to a file (a pipe nobody reads would fill up and stall it)."""

    process: subprocess.Popen[str]
    address: str
    log: Path

    def terminate(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        return self.process.returncode, self.log.read_text()


@pytest.fixture
def logged_pod(tmp_path: Path) -> Iterator[LoggedPod]:
    log = tmp_path / "pod.log"
    command = [sys.executable, "-m", "toolmesh", "runtime", "--port", "0", "--metrics-port", "-1"]
    with log.open("w") as err:
        process = subprocess.Popen(
            [*command, "--module", "isolation_tools"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=pod_env(),
        )
    assert process.stdout is not None
    ready = json.loads(process.stdout.readline())
    yield LoggedPod(process, f"127.0.0.1:{ready['grpc_port']}", log)
    if process.poll() is None:
        process.kill()
        process.wait(timeout=10)
    process.stdout.close()


def call(pod: LoggedPod, function: str, request_id: str, arguments: dict[str, Any]) -> bytes:
    with grpc.insecure_channel(pod.address) as channel:
        request = invoke_pb2.InvokeRequest(
            function=function, arguments=json.dumps(arguments).encode(), request_id=request_id
        )
        reply = runtime_pb2_grpc.RuntimeStub(channel).Invoke(request, timeout=30)
    assert not reply.HasField("error"), reply.error
    return bytes(reply.structured)


def log_lines(err: str) -> list[dict[str, Any]]:
    """Every line of a pod's stderr, each of which must be a JSON object."""
    return [json.loads(line) for line in err.splitlines() if line]


def test_what_a_call_prints_is_logged_as_lines_of_that_call(logged_pod: LoggedPod) -> None:
    pod = logged_pod
    call(pod, "chatty", "req-chatty", {"lines": 3})
    _, err = pod.terminate()
    output = [line for line in log_lines(err) if line["logger"] == "toolmesh.output"]
    assert [(o["msg"], o["stream"], o["level"]) for o in output] == [
        ("chatty line 0", "stdout", "info"),
        ("chatty line 1", "stdout", "info"),
        ("chatty line 2", "stdout", "info"),
        ("chatty complaint", "stderr", "warning"),
    ]
    assert {(o["request_id"], o["function"]) for o in output} == {("req-chatty", "chatty")}


def test_a_call_that_prints_too_much_keeps_its_first_bytes_and_says_how_many_were_cut(
    logged_pod: LoggedPod,
) -> None:
    pod = logged_pod
    call(pod, "flood", "req-flood", {"kib": 1024})
    call(pod, "chatty", "req-after", {"lines": 1})
    _, err = pod.terminate()
    assert len(err) < 3 * PER_CALL_BYTES, "the flood reached the log"
    flood = [
        o for o in log_lines(err) if o["logger"] == "toolmesh.output" and o.get("request_id") == "req-flood"
    ]
    kept = sum(len(line["msg"]) + 1 for line in flood if "truncated_bytes" not in line)
    assert PER_CALL_BYTES - 1024 <= kept <= PER_CALL_BYTES
    [summary] = [line for line in flood if "truncated_bytes" in line]
    assert summary["truncated_bytes"] == 1024 * 1024 - kept
    assert summary["function"] == "flood"
    assert any(line.get("request_id") == "req-after" for line in log_lines(err)), (
        "the next call's budget is its own"
    )


def test_writes_past_sys_stdout_are_framed_and_bounded_too(logged_pod: LoggedPod) -> None:
    pod = logged_pod
    call(pod, "raw_write", "req-raw", {"kib": 1})
    call(pod, "raw_write", "req-raw-big", {"kib": 4 * BYTES_PER_SECOND // 1024})
    _, err = pod.terminate()
    lines = log_lines(err)
    raw = [line for line in lines if line["logger"] == "toolmesh.output" and line["msg"].startswith("raw ")]
    assert raw[0]["stream"] == "stdout" and len(raw[0]["msg"]) == 1023
    assert len(err) < 3 * BYTES_PER_SECOND, "the raw flood reached the log"
    assert any("dropped_bytes" in line or "truncated_bytes" in line for line in lines)
