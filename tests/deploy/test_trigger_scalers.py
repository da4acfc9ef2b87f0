"""`toolmesh deploy render` carries `[[triggers]]` into the cluster, and a runtime that a queue
trigger calls scales on that queue's backlog too (KEDA redis-streams / nats-jetstream scalers)."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from tests.deploy.conftest import crd_validator
from toolmesh.config import ConfigError, parse_config
from toolmesh.deploy.render import RenderOptions, render

TOML = """
[project]
id = "shop"

[state]
url = "redis://redis.data.svc:6379/2"

[[runtimes]]
name = "orders"
modules = ["examples.text"]

[[runtimes]]
name = "reports"
modules = ["examples.weather"]

[[triggers]]
name = "orders"
function = "orders.on_order"
redis_stream = "orders"
max_attempts = 3

[[triggers]]
name = "orders-nats"
function = "orders.on_order"
nats_url = "nats://nats.data.svc:4222"
nats_subject = "orders.new"

[[triggers]]
name = "rows"
function = "reports.on_row"
postgres_url = "postgresql://app@db/app"
postgres_channel = "row_events"

[[triggers]]
name = "nightly"
function = "reports.build"
schedule = "0 3 * * *"
arguments = { format = "pdf" }
"""


def rendered(text: str = TOML, **options: Any) -> dict[str, Any]:
    return render(parse_config(tomllib.loads(text)), RenderOptions(**{"profile": "prod", **options}))


def test_the_cluster_config_carries_the_triggers_and_the_project_id() -> None:
    files = rendered()
    cluster = tomllib.loads(files["configmap-gateway.yaml"]["data"]["toolmesh.toml"])
    assert [t["name"] for t in cluster["triggers"]] == ["orders", "orders-nats", "rows", "nightly"]
    assert cluster["triggers"][0]["max_attempts"] == 3
    assert cluster["triggers"][3]["arguments"] == {"format": "pdf"}
    assert cluster["project"]["id"] == "shop"
    assert parse_config(cluster).triggers == parse_config(tomllib.loads(TOML)).triggers


def test_a_queue_triggers_runtime_scales_on_its_backlog() -> None:
    files = rendered()
    orders = files["scaledobject-runtime-orders.yaml"]
    kinds = [t["type"] for t in orders["spec"]["triggers"]]
    assert kinds == ["prometheus", "redis-streams", "nats-jetstream"]
    redis = orders["spec"]["triggers"][1]["metadata"]
    assert redis["address"] == "redis.data.svc:6379" and redis["databaseIndex"] == "2"
    assert redis["stream"] == "orders" and redis["consumerGroup"] == "toolmesh:shop:orders"
    assert redis["activationLagCount"] == "0"  # any backlog wakes the runtime from zero
    nats = orders["spec"]["triggers"][2]["metadata"]
    assert nats["natsServerMonitoringEndpoint"] == "nats.data.svc:8222"
    assert nats["stream"] == "toolmesh_orders-nats" and nats["consumer"] == "toolmesh_shop_orders-nats"
    # NOTIFY keeps no backlog, a schedule none either: the reports runtime scales on calls only.
    assert [t["type"] for t in files["scaledobject-runtime-reports.yaml"]["spec"]["triggers"]] == [
        "prometheus"
    ]
    for name in ("scaledobject-runtime-orders.yaml", "scaledobject-runtime-reports.yaml"):
        manifest = files[name]
        errors = list(crd_validator(manifest["kind"], manifest["apiVersion"]).iter_errors(manifest))
        assert not errors, [e.message for e in errors]


def test_with_one_runtime_every_queue_trigger_scales_it() -> None:
    text = TOML.replace('[[runtimes]]\nname = "reports"\nmodules = ["examples.weather"]\n', "")
    text = text.replace('function = "orders.on_order"\nnats_url', 'function = "elsewhere.f"\nnats_url')
    kinds = [t["type"] for t in rendered(text)["scaledobject-runtime-orders.yaml"]["spec"]["triggers"]]
    assert kinds == ["prometheus", "redis-streams", "nats-jetstream"]


def test_triggers_without_shared_jobs_in_the_cluster_are_refused() -> None:
    text = TOML.replace('[state]\nurl = "redis://redis.data.svc:6379/2"\n', "")
    with pytest.raises(ConfigError, match="triggers: each run is a job"):
        rendered(text)
    assert "triggers" in rendered(text, redis=True)["configmap-gateway.yaml"]["data"]["toolmesh.toml"]
