"""`toolmesh deploy render`: a config's runtimes become the objects of deploy/, retargeted."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import DEPLOY, Manifest, containers, kustomize, kustomize_rendered, one, validate
from toolmesh.cli import main
from toolmesh.config import (
    ConfigError,
    KeyConfig,
    KubeScalerConfig,
    MeshConfig,
    RuntimeConfig,
    StateConfig,
    load_config,
    parse_config,
)
from toolmesh.deploy.names import CONFIG_CHECKSUM, GATEWAY
from toolmesh.deploy.render import RenderOptions, render, stream
from toolmesh.runtimes.mcp import BRIDGE_MODULE, COMMAND_ENV, NAMESPACE_ENV

TOML = """
[gateway]
host = "127.0.0.1"
http_port = 9000
grpc_port = 9001
call_timeout = 12.5
drain_grace = 33.5

[[runtimes]]
name = "weather"
modules = ["examples.weather"]
env = { WEATHER_API = "offline", TOOLMESH_MESH_ADDRESS = "elsewhere:1" }
timeout = 7.5
max_inflight = 64
workers = 8
drain_grace = 42
max_memory_mb = 1536
memory_mb = 768
cpu = 0.25
max_cpu = "2"
log_level = "debug"
max_result_bytes = 4096

[[runtimes]]
name = "legacy"
address = "10.0.0.7:50061"
timeout = 3

[[keys]]
name = "chat"
key_env = "CHAT_KEY"
scopes = ["weather.*"]
rate = 5

[kube_scaler]
enabled = true
min_interval = 2

[mcp]
allowed_origins = ["https://app.example.com"]
page_size = 20

[chat]
upstream_url = "https://llm.example.com/v1"
api_key_env = "UPSTREAM_KEY"
models = ["m1"]
max_rounds = 2

[router]
threshold = 0.25
k = 7
max_prompt_chars = 4000
model = "models/mine.onnx"
tokenizer = "models/tokenizer.json"
data_dir = "/var/lib/toolmesh"

[router.llm]
base_url = "https://llm.example.com/v1"
model = "small"
api_key_env = "ROUTER_LLM_KEY"
"""


def _toml(files: dict[str, Manifest]) -> dict[str, Any]:
    return tomllib.loads(files["configmap-gateway.yaml"]["data"]["toolmesh.toml"])


def _without_config_text(objects: list[Manifest]) -> list[Manifest]:
    """The objects with the gateway's toml parsed and its checksum dropped (comments differ)."""
    result = []
    for manifest in objects:
        manifest = yaml.safe_load(yaml.safe_dump(manifest))
        if manifest["kind"] == "ConfigMap":
            manifest["data"]["toolmesh.toml"] = tomllib.loads(manifest["data"]["toolmesh.toml"])
        if manifest["kind"] == "Deployment":
            manifest["spec"]["template"]["metadata"].get("annotations", {}).pop(CONFIG_CHECKSUM, None)
        result.append(manifest)
    return sorted(result, key=lambda m: (m["kind"], m["metadata"]["name"]))


@pytest.mark.parametrize(("profile", "kustomization"), [("prod", "overlays/prod"), ("dev", "base")])
def test_the_default_config_renders_what_deploy_holds(
    profile: str, kustomization: str, tmp_path: Path
) -> None:
    """The templates and the renderer agree: rendering the default config (the examples
    runtime) gives back deploy/'s own objects."""
    reference = kustomize(DEPLOY / kustomization)
    image = one(reference, "Deployment", GATEWAY)["spec"]["template"]["spec"]["containers"][0]["image"]
    files = render(load_config(None), RenderOptions(image=image, profile=profile))
    assert _without_config_text(kustomize_rendered(files, tmp_path)) == _without_config_text(reference)


def test_a_config_renders_to_its_runtimes(tmp_path: Path) -> None:
    config = parse_config(tomllib.loads(TOML))
    files = render(config, RenderOptions(namespace="tools", image="reg.example/toolmesh:1.2"))
    objects = kustomize_rendered(files, tmp_path)

    # The gateway's config: module runtimes got their Services' DNS names, the rest is kept.
    cluster = parse_config(_toml(files))
    names = ["toolmesh-gateway", "toolmesh-gateway.tools", "toolmesh-gateway.tools.svc"]
    served = (*names, "toolmesh-gateway.tools.svc.cluster.local", *config.gateway.allowed_hosts)
    update = {"host": "0.0.0.0", "allowed_hosts": served}
    assert cluster.gateway.model_dump() == config.gateway.model_copy(update=update).model_dump()
    assert [r.model_dump() for r in cluster.runtimes] == [
        RuntimeConfig(
            name="weather",
            address="dns:///toolmesh-runtime-weather.tools.svc.cluster.local:50061",
            # Kept so the gateway knows the functions while the runtime is at zero pods.
            modules=("examples.weather",),
            token_env="TOOLMESH_POD_TOKEN",
        ).model_dump(),
        config.runtimes[1].model_dump(),
    ]
    assert cluster.keys == config.keys and cluster.kube_scaler == config.kube_scaler
    # Every other section arrives whole; relative router paths name files in the image.
    assert cluster.mcp == config.mcp and cluster.chat == config.chat
    paths = {
        "model": Path("/app/models/mine.onnx"),
        "tokenizer": Path("/app/models/tokenizer.json"),
        "embeddings_dir": Path("/var/lib/toolmesh"),
    }
    assert cluster.router == config.router.model_copy(update=paths)
    assert cluster.router.data_dir == Path("/var/lib/toolmesh")

    # Only the runtime with modules runs here; its settings are its pod's flags and environment.
    deployments = {d["metadata"]["name"] for d in objects if d["kind"] == "Deployment"}
    assert deployments == {GATEWAY, "toolmesh-runtime-weather"}
    (runtime,) = containers(one(objects, "Deployment", "toolmesh-runtime-weather"))
    assert runtime["image"] == "reg.example/toolmesh:1.2"
    for flag in (
        "--timeout=7.5",
        "--max-inflight=64",
        "--workers=8",
        "--drain-grace=42",
        "--max-result-bytes=4096",
        "--max-memory-mb=1536",
        "--log-level=debug",
        "--module=examples.weather",
    ):
        assert flag in runtime["args"]
    assert runtime["resources"] == {
        "requests": {"cpu": "0.25", "memory": "768Mi"},
        "limits": {"cpu": "2", "memory": "1536Mi"},  # the container's memory limit is the pod's
    }
    assert [a for a in runtime["args"] if a.startswith("--module")] == ["--module=examples.weather"]
    env = {e["name"]: e.get("value") for e in runtime["env"]}
    assert env["WEATHER_API"] == "offline"
    assert env["TOOLMESH_MESH_ADDRESS"] == "elsewhere:1"  # the config's own value wins
    assert [e["name"] for e in runtime["env"]].count("TOOLMESH_MESH_ADDRESS") == 1
    grace = one(objects, "Deployment", "toolmesh-runtime-weather")["spec"]["template"]["spec"]
    assert grace["terminationGracePeriodSeconds"] == 5 + 42 + 15
    gateway_grace = one(objects, "Deployment", GATEWAY)["spec"]["template"]["spec"]
    assert gateway_grace["terminationGracePeriodSeconds"] == 5 + 34 + 15, "preStop, the drain, a margin"

    # key_env keys come from a Secret; the kube-scaler may scale exactly the weather runtime.
    (gateway,) = containers(one(objects, "Deployment", GATEWAY))
    for variable in ("CHAT_KEY", "UPSTREAM_KEY", "ROUTER_LLM_KEY"):
        assert {
            "name": variable,
            "valueFrom": {"secretKeyRef": {"name": "toolmesh-keys", "key": variable}},
        } in gateway["env"]
    assert "upstream-secret" not in yaml.safe_dump(objects), "secrets never reach the ConfigMap"
    assert one(objects, "Role", "toolmesh-gateway-scaler")["rules"][0]["resourceNames"] == [
        "toolmesh-runtime-weather"
    ]
    query = one(objects, "ScaledObject", "toolmesh-runtime-weather")["spec"]["triggers"][0]["metadata"][
        "query"
    ]
    assert 'toolmesh_pending_requests{namespace="tools",runtime="weather"}' in query


@pytest.mark.parametrize(
    ("settings", "resources"),
    [
        ({}, {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}),
        (
            {"max_cpu": "none"},
            {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        ),
        (
            {"cpu": "1500m"},
            {"requests": {"cpu": "1500m", "memory": "128Mi"}, "limits": {"cpu": "1500m", "memory": "512Mi"}},
        ),
        (
            {"memory_mb": 1024},
            {"requests": {"cpu": "100m", "memory": "1024Mi"}, "limits": {"cpu": "1", "memory": "1024Mi"}},
        ),
    ],
)
def test_a_runtimes_resources_replace_the_manifests_defaults(
    settings: dict[str, str], resources: dict[str, dict[str, str]]
) -> None:
    config = MeshConfig(runtimes=(RuntimeConfig(name="tools", modules=("examples.text",), **settings),))
    deployment = render(config, RenderOptions())["deployment-runtime-tools.yaml"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == resources


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"cpu": "lots"}, "cpu 'lots' must be cores"),
        ({"max_cpu": "-1"}, "max_cpu '-1' must be cores"),
        ({"cpu": "2", "max_cpu": "500m"}, "cpu (2) exceeds max_cpu (500m)"),
        ({"memory_mb": 2048, "max_memory_mb": 1024}, "memory_mb (2048) exceeds max_memory_mb (1024)"),
    ],
)
def test_impossible_resources_are_refused(settings: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        RuntimeConfig(name="tools", modules=("examples.text",), **settings)


@pytest.mark.parametrize(
    ("setting", "value", "field", "expected"),
    [
        ("min_replicas", 2, ("minReplicaCount",), 2),
        ("max_replicas", 12, ("maxReplicaCount",), 12),
        ("idle_timeout", 45.5, ("cooldownPeriod",), 46),  # whole seconds, never sooner
        ("target_concurrency", 5, ("triggers", 0, "metadata", "threshold"), "5"),
    ],
)
def test_a_runtimes_scaling_settings_become_its_scaled_object(
    setting: str, value: float, field: tuple[str | int, ...], expected: object
) -> None:
    """KEDA scales a runtime in the cluster as the gateway does on one machine."""

    def scaled(**settings: float) -> Any:
        runtime = RuntimeConfig(name="tools", modules=("examples.text",), **settings)  # type: ignore[arg-type]
        node = render(MeshConfig(runtimes=(runtime,)))["scaledobject-runtime-tools.yaml"]["spec"]
        for key in field:
            node = node[key]
        return node

    assert scaled(**{setting: value}) == expected
    assert scaled() != expected, "the default is different: the test must see the setting"


def test_the_checksum_follows_the_config() -> None:
    config = MeshConfig(runtimes=(RuntimeConfig(name="tools", modules=("examples.text",)),))

    def checksum(config: MeshConfig) -> str:
        deployment = render(config)["deployment-gateway.yaml"]
        value: str = deployment["spec"]["template"]["metadata"]["annotations"][CONFIG_CHECKSUM]
        return value

    changed = config.model_copy(update={"gateway": config.gateway.model_copy(update={"call_timeout": 5.0})})
    assert checksum(config) == checksum(config)
    assert checksum(changed) != checksum(config)
    # A runtime setting that only its pods see does not roll the gateway.
    workers = config.model_copy(update={"runtimes": (config.runtimes[0].model_copy(update={"workers": 2}),)})
    assert checksum(workers) == checksum(config)


@pytest.mark.parametrize(
    ("config", "options", "message"),
    [
        (
            MeshConfig(gateway={"http_port": 0}),
            RenderOptions(),
            "gateway.http_port: a Service needs a fixed port",
        ),
        (
            MeshConfig(runtimes=(RuntimeConfig(name="x" * 47, modules=("m",)),)),
            RenderOptions(),
            "runtimes.0: name 'xxx",
        ),
        (MeshConfig(), RenderOptions(namespace="Tools"), "namespace 'Tools' must be a DNS label"),
        (MeshConfig(), RenderOptions(profile="staging"), "profile must be one of prod, dev"),
        (
            MeshConfig(
                runtimes=(RuntimeConfig(name="a", address="h:1"),), kube_scaler=KubeScalerConfig(enabled=True)
            ),
            RenderOptions(),
            "nothing to scale",
        ),
    ],
)
def test_what_cannot_run_on_kubernetes_is_refused(
    config: MeshConfig, options: RenderOptions, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        render(config, options)


def test_the_longest_runtime_name_still_fits() -> None:
    files = render(MeshConfig(runtimes=(RuntimeConfig(name="x" * 46, modules=("m",)),)))
    assert len(files[f"service-runtime-{'x' * 46}.yaml"]["metadata"]["name"]) == 63


def test_cli_writes_a_kustomization_or_a_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "toolmesh.toml"
    config.write_text(TOML)
    out = tmp_path / "k8s"
    assert main(["deploy", "render", "--config", str(config), "--output", str(out), "-n", "tools"]) == 0
    assert f"kubectl apply -k {out}" in capsys.readouterr().out
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == "tools"
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in out.iterdir() if p.name != "kustomization.yaml"
    )
    assert (
        (out / "deployment-runtime-weather.yaml")
        .read_text()
        .startswith("# Written by `toolmesh deploy render`")
    )

    assert main(["deploy", "render", "--config", str(config), "--profile", "dev"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    expected = stream(render(parse_config(tomllib.loads(TOML)), RenderOptions(profile="dev")))
    assert documents == list(yaml.safe_load_all(expected))
    assert [d["kind"] for d in documents][:2] == ["Namespace", "ServiceAccount"]


def test_cli_names_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "toolmesh.toml"
    config.write_text('[gateway]\ngrpc_port = 0\n[[runtimes]]\nname = "a"\nmodules = ["m"]\n')
    assert main(["deploy", "render", "--config", str(config)]) == 2
    assert (
        "toolmesh deploy render: gateway.grpc_port: a Service needs a fixed port" in capsys.readouterr().err
    )
    assert main(["deploy", "render", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_keys_given_by_hash_need_no_secret() -> None:
    key = KeyConfig(name="ci", key_hash="sha256:" + "0" * 64)
    files = render(MeshConfig(runtimes=(RuntimeConfig(name="a", modules=("m",)),), keys=(key,)))
    (gateway,) = containers(files["deployment-gateway.yaml"])
    assert [e["name"] for e in gateway["env"]] == [
        "TOOLMESH_MESH_TOKEN",
        "TOOLMESH_POD_TOKEN",
        "TOOLMESH_STATE_URL",
    ]
    assert parse_config(_toml(files)).keys == (key,)


def test_the_gateway_and_its_runtimes_share_the_pods_token_from_a_required_secret() -> None:
    files = render(MeshConfig(runtimes=(RuntimeConfig(name="a", modules=("m",)),)))
    (gateway,) = containers(files["deployment-gateway.yaml"])
    (runtime,) = containers(files["deployment-runtime-a.yaml"])
    expected = {"secretKeyRef": {"name": "toolmesh-pods", "key": "token"}}
    for container in (gateway, runtime):
        [token] = [e for e in container["env"] if e["name"] == "TOOLMESH_POD_TOKEN"]
        assert token["valueFrom"] == expected, "not optional: no pod serves without it"
    [cluster_runtime] = parse_config(_toml(files)).runtimes
    assert cluster_runtime.token_env == "TOOLMESH_POD_TOKEN"
    [endpoint] = files["podmonitor-runtimes.yaml"]["spec"]["podMetricsEndpoints"]
    assert endpoint["authorization"]["credentials"] == {"name": "toolmesh-pods", "key": "token"}


def test_a_relative_catalog_names_the_file_in_the_image() -> None:
    """Locally a relative `catalog` is beside the config; in the cluster the config is a mounted
    ConfigMap, and the file is in the image's working directory, /app."""
    runtimes = (
        RuntimeConfig(name="a", modules=("m",)),
        RuntimeConfig(name="near", address="10.0.0.7:50061", catalog="catalogs/near.json"),
        RuntimeConfig(name="far", address="10.0.0.8:50061", catalog="/srv/far.json"),
    )
    cluster = parse_config(_toml(render(MeshConfig(runtimes=runtimes))))
    assert [r.catalog for r in cluster.runtimes] == [None, "/app/catalogs/near.json", "/srv/far.json"]


def test_state_goes_to_the_cluster_and_a_password_never_to_the_configmap() -> None:
    runtimes = (RuntimeConfig(name="a", modules=("m",)),)
    state = {"url": "redis://redis.example:6379/2", "key_prefix": "prod:", "timeout": 0.5}
    files = render(MeshConfig(runtimes=runtimes, state=StateConfig.model_validate(state)))
    assert _toml(files)["state"] == state
    secret = {"state": {"url": "rediss://:hunter2@redis.example:6380/0"}}
    with pytest.raises(ConfigError, match=r"state\.url holds credentials.*`toolmesh-state` Secret"):
        render(parse_config({**secret, "runtimes": [{"name": "a", "modules": ["m"]}]}))
    with pytest.raises(ConfigError, match=r"state\.url names a Redis already"):
        render(
            MeshConfig(runtimes=runtimes, state=StateConfig.model_validate(state)), RenderOptions(redis=True)
        )


def test_redis_comes_with_the_option_in_any_namespace() -> None:
    runtimes = (RuntimeConfig(name="a", modules=("m",)),)
    plain = render(MeshConfig(runtimes=runtimes))
    assert not any(name.endswith("-redis.yaml") for name in plain)
    files = render(MeshConfig(runtimes=runtimes), RenderOptions(redis=True, namespace="tools"))
    for name in ("statefulset-redis.yaml", "service-redis.yaml", "networkpolicy-redis.yaml"):
        assert files[name]["metadata"]["namespace"] == "tools"
    assert files["secret-toolmesh-state.yaml"]["stringData"] == {"url": "redis://toolmesh-redis:6379/0"}


def test_jobs_are_on_in_the_cluster_when_the_replicas_share_redis() -> None:
    runtimes = (RuntimeConfig(name="a", modules=("m",)),)
    external = StateConfig(url="redis://redis.example:6379/0")
    assert _toml(render(MeshConfig(runtimes=runtimes, state=external)))["jobs"] == {}
    assert _toml(render(MeshConfig(runtimes=runtimes), RenderOptions(redis=True)))["jobs"] == {}
    off = parse_config({"runtimes": [{"name": "a", "modules": ["m"]}], "jobs": {"enabled": False}})
    assert _toml(render(off, RenderOptions(redis=True)))["jobs"] == {"enabled": False}


def test_sqlite_jobs_are_off_in_the_cluster_unless_the_config_turns_them_on() -> None:
    # Each gateway replica would hold its own SQLite queue: a job submitted through one replica
    # would not be found through another.
    runtimes = '[[runtimes]]\nname = "w"\nmodules = ["examples.weather"]\n'
    default = parse_config(tomllib.loads(runtimes))
    assert _toml(render(default))["jobs"] == {"enabled": False}
    chosen = parse_config(
        tomllib.loads(runtimes + '[jobs]\nenabled = true\nworkers = 2\ncallback_secret_env = "HOOK"\n')
    )
    files = render(chosen)
    assert _toml(files)["jobs"] == {
        "workers": 2,
        "callback_secret_env": "HOOK",
        "path": "/var/lib/toolmesh/jobs.sqlite3",  # the gateway's data volume
    }
    (gateway,) = containers(one(list(files.values()), "Deployment", GATEWAY))
    assert {
        "name": "HOOK",
        "valueFrom": {"secretKeyRef": {"name": "toolmesh-keys", "key": "HOOK"}},
    } in gateway["env"]


def test_a_stdio_mcp_runtime_renders_as_pods_of_the_bridge_in_its_own_image(tmp_path: Path) -> None:
    command = ("mcp-server-time", "--local-timezone", "UTC")
    config = MeshConfig(
        runtimes=(
            RuntimeConfig(
                name="clock",
                mcp_command=command,
                image="reg.example/toolmesh-time:1",
                env={"TZ": "UTC"},
                startup_timeout=90,
            ),
            RuntimeConfig(name="weather", modules=("examples.weather",)),
        )
    )
    files = render(config, RenderOptions(namespace="tools", image="reg.example/toolmesh:1.2"))
    objects = kustomize_rendered(files, tmp_path)
    validate(objects)

    (clock,) = containers(one(objects, "Deployment", "toolmesh-runtime-clock"))
    # Its own image (toolmesh and the server's command); the other runtimes keep --image.
    assert clock["image"] == "reg.example/toolmesh-time:1"
    (weather,) = containers(one(objects, "Deployment", "toolmesh-runtime-weather"))
    assert weather["image"] == "reg.example/toolmesh:1.2"
    assert [a for a in clock["args"] if a.startswith("--module")] == [f"--module={BRIDGE_MODULE}"]
    env = {e["name"]: e.get("value") for e in clock["env"]}
    assert json.loads(env[COMMAND_ENV]) == list(command) and env[NAMESPACE_ENV] == "clock"
    assert env["TZ"] == "UTC"
    # The server lists its tools while the pod starts: the startup probe waits startup_timeout.
    assert clock["startupProbe"]["failureThreshold"] == 90
    # The gateway (whose image has no server) learns the functions from its pods: one stays up.
    scaled = one(objects, "ScaledObject", "toolmesh-runtime-clock")["spec"]
    assert scaled["minReplicaCount"] == 1
    assert one(objects, "ScaledObject", "toolmesh-runtime-weather")["spec"]["minReplicaCount"] == 0
    (gateway_entry,) = [r for r in parse_config(_toml(files)).runtimes if r.name == "clock"]
    assert gateway_entry.address == "dns:///toolmesh-runtime-clock.tools.svc.cluster.local:50061"
    assert not gateway_entry.mcp_command and not gateway_entry.modules


def test_an_image_is_for_runtimes_with_pods() -> None:
    with pytest.raises(ValueError, match="`image` goes with `modules` or `mcp_command`"):
        RuntimeConfig(name="remote", mcp_url="http://127.0.0.1:1/mcp", image="x")


def test_the_gateway_is_set_up_to_lose_a_replica_without_losing_callers() -> None:
    # docs/operations.md, "When a gateway replica dies": readiness on /readyz, a preStop before the drain,
    # a grace past both, rolling updates that never lower the count, and (prod, two replicas
    # at least) a budget that keeps one up through a node drain.
    config = parse_config(
        {"gateway": {"drain_grace": 20, "drain_delay": 2.5}, "runtimes": [{"name": "a", "modules": ["m"]}]}
    )
    for profile in ("dev", "prod"):
        objects = list(render(config, RenderOptions(profile=profile)).values())
        deployment = one(objects, "Deployment", GATEWAY)
        (gateway,) = containers(deployment)
        assert gateway["readinessProbe"]["httpGet"]["path"] == "/readyz"
        pre_stop = gateway["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert pre_stop >= 5, "endpoints are removed before the gateway refuses calls"
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace == pre_stop + 3 + 20 + 15, "preStop, the delay and the drain, a margin"
        assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
        budgets = [
            o for o in objects if o["kind"] == "PodDisruptionBudget" and o["metadata"]["name"] == GATEWAY
        ]
        if profile == "prod":
            (budget,) = budgets
            assert budget["spec"]["minAvailable"] == 1
            autoscaler = one(objects, "HorizontalPodAutoscaler", GATEWAY)
            assert autoscaler["spec"]["minReplicas"] >= 2, "a budget of one needs two replicas"
        else:
            assert budgets == [] and deployment["spec"]["replicas"] == 1, "one replica: no budget to keep"
