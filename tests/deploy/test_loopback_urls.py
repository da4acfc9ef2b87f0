"""`toolmesh deploy render` warns about every address of the config that names this machine:
in the cluster it names the gateway's (or a runtime's) own pod, where nothing listens."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolmesh.cli import main
from toolmesh.deploy.loopback_urls import is_loopback, target_hosts

LOOPBACK = """
[gateway]
host = "127.0.0.1"              # where it listens: the cluster's is 0.0.0.0, nothing to say

[[runtimes]]
name = "w"
modules = ["examples.weather"]
[runtimes.env]
OTEL_EXPORTER_OTLP_ENDPOINT = "http://localhost:4318"
DB = "postgres://u:pw@[::1]:5432/db"
MODE = "fast"

[[runtimes]]
name = "legacy"
address = "127.0.0.1:50061"

[[runtimes]]
name = "far"
address = "dns:///far.tools.svc.cluster.local:50061"

[[runtimes]]
name = "memory"
mcp_url = "http://localhost:3001/mcp"

[[runtimes]]
name = "billing"
grpc_reflection = "127.0.0.1:50051"

[state]
url = "redis://127.0.0.1:6379/0"

[chat]
upstream_url = "http://localhost:11434/v1"

[router.llm]
base_url = "http://[::1]:8000/v1"
model = "small"
"""


def _render(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    (tmp_path / "toolmesh.toml").write_text(text)
    out = tmp_path / "k8s"
    assert main(["deploy", "render", "--config", str(tmp_path / "toolmesh.toml"), "--output", str(out)]) == 0
    assert (out / "configmap-gateway.yaml").is_file(), "a warning, not a failure"
    return capsys.readouterr().err.splitlines()


def test_each_loopback_address_gets_one_line_naming_its_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _render(tmp_path, LOOPBACK, capsys)
    expected = {
        "[state] url = 'redis://127.0.0.1:6379/0'": "redis://<service>.<namespace>.svc:6379/0",
        "[chat] upstream_url = 'http://localhost:11434/v1'": "Service's DNS name",
        "[router.llm] base_url = 'http://[::1]:8000/v1'": "Service's DNS name",
        "[[runtimes]] \"legacy\" address = '127.0.0.1:50061'": "dns:///<service>.<namespace>.svc",
        "[[runtimes]] \"memory\" mcp_url = 'http://localhost:3001/mcp'": "Service's DNS name",
        "[[runtimes]] \"billing\" grpc_reflection = '127.0.0.1:50051'": "Service's DNS name",
        "[[runtimes]] \"w\" env OTEL_EXPORTER_OTLP_ENDPOINT = 'http://localhost:4318'": "collector's Service",
        # The password stays out of the terminal.
        "[[runtimes]] \"w\" env DB = 'postgres://[::1]:5432/db'": "Service's DNS name",
    }
    assert len(lines) == len(expected), lines
    for start, advice in expected.items():
        (line,) = [line for line in lines if start in line]
        assert line.startswith("toolmesh deploy render: warning: ")
        assert "the pod itself" in line and advice in line
    assert "pw" not in "\n".join(lines)


def test_a_config_with_cluster_addresses_renders_without_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        LOOPBACK.replace("127.0.0.1:6379", "redis.tools.svc:6379")
        .replace("localhost:11434", "ollama.tools.svc:11434")
        .replace("[::1]:8000", "llm.example.com")
        .replace("127.0.0.1:50061", "10.0.0.7:50061")
        .replace("localhost:3001", "memory.tools.svc:3001")
        .replace("127.0.0.1:50051", "billing.tools.svc:50051")
        .replace("localhost:4318", "otel.monitoring.svc:4318")
        .replace("[::1]:5432", "db.tools.svc:5432")
    )
    assert _render(tmp_path, text, capsys) == []


@pytest.mark.parametrize(
    ("target", "hosts"),
    [
        ("localhost:50061", ["localhost"]),
        ("[::1]:50061", ["::1"]),
        ("dns:///localhost:50061", ["localhost"]),
        ("dns://8.8.8.8/svc.example:50061", ["svc.example"]),
        ("ipv4:10.0.0.1:1,127.0.0.1:2", ["10.0.0.1", "127.0.0.1"]),
        ("ipv6:[::1]:50061", ["::1"]),
        ("unix:///run/redis.sock", []),
        ("rediss://:pw@127.0.0.2:6380/0", ["127.0.0.2"]),
    ],
)
def test_the_host_of_every_address_form(target: str, hosts: list[str]) -> None:
    assert target_hosts(target) == hosts


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("LOCALHOST", True),
        ("api.localhost", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", True),
        ("10.0.0.1", False),
        ("localhost.example.com", False),
        ("redis", False),
    ],
)
def test_what_counts_as_this_machine(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
