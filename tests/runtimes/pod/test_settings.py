"""A pod's settings and its command line: what a pod is told parses back into its settings."""

from __future__ import annotations

import argparse

import pytest

from toolmesh.cli import build_parser
from toolmesh.protocol.pod_env import PodEnvironment
from toolmesh.runtimes.pod.settings import COMMAND, PodSettings, add_arguments

EXAMPLES = [
    PodSettings(modules=("sample_tools",)),
    PodSettings(
        modules=("sample_tools", "examples.weather"),
        host="0.0.0.0",
        port=0,
        metrics_port=None,
        drain_grace=0.25,
        timeout=1.5,
        max_inflight=3,
        workers=2,
        max_memory_mb=2048,
        max_result_bytes=4096,
        debug=True,
        log_level="warning",
        mesh_address="127.0.0.1:50051",
        mesh_token="s3cret",
    ),
    PodSettings(
        modules=("pool_tools",), port=0, metrics_port=0, template="exec", socket_dir="/tmp/toolmesh-x"
    ),
    PodSettings(modules=("pool_tools",), socket_path="/tmp/toolmesh-x/pod-7.sock", ready_fd=5, spawn_id="12"),
    PodSettings(modules=("loop_tools",), loop_blocked_after=0.25, liveness_socket="/tmp/toolmesh-x/7.live"),
]


def parse_cli(argv: list[str], environment: PodEnvironment) -> PodSettings:
    """What `python <argv>` would run with, as `toolmesh runtime` reads it."""
    assert argv[:2] == ["-m", "toolmesh"]
    return PodSettings.from_arguments(build_parser().parse_args(argv[2:]), environment)


@pytest.mark.parametrize("settings", EXAMPLES)
def test_the_command_line_parses_back_into_the_same_settings(settings: PodSettings) -> None:
    assert parse_cli(settings.argv(), settings.environment) == settings


@pytest.mark.parametrize("settings", EXAMPLES)
def test_add_arguments_alone_reads_the_same_command_line(settings: PodSettings) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = settings.argv()
    assert tuple(argv[: len(COMMAND)]) == COMMAND
    args = parser.parse_args(argv[len(COMMAND) :])
    assert PodSettings.from_arguments(args, settings.environment) == settings


def test_the_flags_default_to_the_settings_defaults() -> None:
    assert parse_cli(["-m", "toolmesh", "runtime", "--module", "m"], PodEnvironment()) == PodSettings(
        modules=("m",)
    )


def test_any_negative_metrics_port_turns_metrics_off() -> None:
    argv = ["-m", "toolmesh", "runtime", "--module", "m", "--metrics-port", "-5"]
    assert parse_cli(argv, PodEnvironment()).metrics_port is None


def test_the_mesh_token_never_goes_on_a_command_line_or_into_a_repr() -> None:
    settings = PodSettings(modules=("m",), mesh_address="gateway:50051", mesh_token="s3cret")
    assert not any("s3cret" in arg or "gateway:50051" in arg for arg in settings.argv())
    assert "s3cret" not in repr(settings)
    assert settings.environment == PodEnvironment("gateway:50051", "s3cret")


def test_the_environment_fills_the_mesh_settings() -> None:
    environment = PodEnvironment("gateway:50051", "s3cret")
    settings = parse_cli(["-m", "toolmesh", "runtime", "--module", "m"], environment)
    assert (settings.mesh_address, settings.mesh_token) == ("gateway:50051", "s3cret")
