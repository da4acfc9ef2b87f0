"""Template processes the gateway starts, and the pods they fork or exec."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import StartGateway, runtime
from toolmesh import AsyncClient
from toolmesh.config import RuntimeConfig
from toolmesh.gateway.pool.launcher import template_settings
from toolmesh.runtimes.pod.settings import PodSettings


def test_a_runtime_config_becomes_the_settings_of_its_template() -> None:
    config = RuntimeConfig(
        name="tools",
        modules=("a", "b"),
        timeout=2.5,
        max_inflight=7,
        workers=3,
        drain_grace=0.5,
        log_level="warning",
        spawn="exec",
    )
    assert template_settings(config, "/tmp/sockets") == PodSettings(
        modules=("a", "b"),
        host="127.0.0.1",
        port=0,
        metrics_port=0,
        drain_grace=0.5,
        timeout=2.5,
        max_inflight=7,
        workers=3,
        log_level="warning",
        template="exec",
        socket_dir="/tmp/sockets",
    )
    # Over gRPC too: every pod the gateway starts listens in the socket directory only.
    over_grpc = config.model_copy(update={"transport": "grpc"})
    assert template_settings(over_grpc, "/tmp/sockets").socket_dir == "/tmp/sockets"


def test_a_runtime_config_defaults_to_the_pod_defaults() -> None:
    settings = template_settings(RuntimeConfig(name="tools", modules=("a",)), "/tmp/sockets")
    defaults = PodSettings(modules=("a",))
    limits = ("drain_grace", "timeout", "max_inflight", "workers", "debug", "log_level")
    assert [getattr(settings, name) for name in limits] == [getattr(defaults, name) for name in limits]


@pytest.mark.slow
@pytest.mark.parametrize("spawn", ["fork", "exec"])
async def test_pods_the_gateway_starts_load_nothing_of_the_gateway(
    gateway_factory: StartGateway, spawn: str
) -> None:
    gateway = await gateway_factory(runtime("tools", "import_tools", spawn=spawn))
    async with AsyncClient(gateway.url) as client:
        result = await client.invoke("gateway_modules", {})
    assert result.structured == []
