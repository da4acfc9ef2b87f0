"""Every way the manifests come out (each overlay, the kube-scaler component, `toolmesh deploy
render` in both profiles) is valid and has the properties the mesh depends on."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import (
    DEPLOY,
    Manifest,
    containers,
    kustomize,
    kustomize_rendered,
    kustomize_with,
    of_kind,
    one,
    validate,
)
from toolmesh.config import EXAMPLE_MODULES, MeshConfig, parse_config
from toolmesh.deploy.names import CONFIG_CHECKSUM, GATEWAY, RUNTIME_LABEL
from toolmesh.deploy.render import INFLIGHT_METRIC, PENDING_METRIC, RenderOptions, render

#: Each build, by name: how to make it and the namespace everything must land in.
BUILDS = [
    "base",
    "dev",
    "prod",
    "prod+kube-scaler",
    "prod+redis",
    "render",
    "render-dev",
    "render-redis",
    "render-scaled",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Manifest]]:
    tmp = tmp_path_factory.mktemp("builds")
    return {
        "base": kustomize(DEPLOY / "base"),
        "dev": kustomize(DEPLOY / "overlays" / "dev"),
        "prod": kustomize(DEPLOY / "overlays" / "prod"),
        "prod+kube-scaler": kustomize_with(
            tmp / "scaler", [DEPLOY / "overlays" / "prod"], [DEPLOY / "components" / "kube-scaler"]
        ),
        "prod+redis": kustomize_with(
            tmp / "redis", [DEPLOY / "overlays" / "prod"], [DEPLOY / "components" / "redis"]
        ),
        "render": kustomize_rendered(render(MeshConfig(runtimes=_two_runtimes())), tmp / "render"),
        "render-redis": kustomize_rendered(
            render(MeshConfig(runtimes=_two_runtimes()), RenderOptions(redis=True)), tmp / "render-redis"
        ),
        "render-dev": kustomize_rendered(
            render(MeshConfig(runtimes=_two_runtimes()), RenderOptions(profile="dev")), tmp / "render-dev"
        ),
        # Every scaling setting away from its default, and the data volume on a claim.
        "render-scaled": kustomize_rendered(
            render(MeshConfig(runtimes=_scaled_runtimes()), RenderOptions(data_claim="toolmesh-data")),
            tmp / "render-scaled",
        ),
    }


def _two_runtimes() -> Any:
    from toolmesh.config import RuntimeConfig

    return (
        RuntimeConfig(name="weather", modules=("examples.weather",), drain_grace=20),
        RuntimeConfig(name="text", modules=("examples.text", "examples.arithmetic"), workers=4),
    )


def _scaled_runtimes() -> Any:
    from toolmesh.config import RuntimeConfig

    settings = {"min_replicas": 2, "max_replicas": 9, "idle_timeout": 45.5, "target_concurrency": 3}
    return (RuntimeConfig(name="busy", modules=("examples.weather",), **settings), *_two_runtimes())


@pytest.fixture(params=BUILDS)
def objects(request: pytest.FixtureRequest, built: dict[str, list[Manifest]]) -> list[Manifest]:
    found: list[Manifest] = built[request.param]
    return found


def _gateway_config(objects: list[Manifest]) -> tuple[str, MeshConfig]:
    text: str = one(objects, "ConfigMap", GATEWAY)["data"]["toolmesh.toml"]
    return text, parse_config(tomllib.loads(text), "the gateway's ConfigMap")


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _pod_labels(deployment: Manifest) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def _runtimes(objects: list[Manifest]) -> list[Manifest]:
    return [d for d in of_kind(objects, "Deployment") if RUNTIME_LABEL in _pod_labels(d)]


def _flag(args: list[str], name: str) -> str:
    (value,) = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"--{name}=")]
    return value


def test_valid_for_kubernetes_and_the_crds(objects: list[Manifest]) -> None:
    validate(objects)
    namespaces = {m["metadata"]["name"] for m in of_kind(objects, "Namespace")}
    assert len(namespaces) == 1
    for manifest in objects:
        if manifest["kind"] != "Namespace":
            assert manifest["metadata"].get("namespace") in namespaces, manifest["metadata"]["name"]


def test_selectors_match_the_pods_they_mean(objects: list[Manifest]) -> None:
    # Every workload that runs pods: the Deployments, and components/redis's StatefulSet.
    deployments = of_kind(objects, "Deployment") + of_kind(objects, "StatefulSet")
    for deployment in deployments:
        assert _matches(deployment["spec"]["selector"]["matchLabels"], _pod_labels(deployment))
    for service in of_kind(objects, "Service"):
        (target,) = [d for d in deployments if _matches(service["spec"]["selector"], _pod_labels(d))]
        assert target["metadata"]["name"] == service["metadata"]["name"]
    for budget in of_kind(objects, "PodDisruptionBudget"):
        selector = budget["spec"]["selector"]["matchLabels"]
        assert [d["metadata"]["name"] for d in deployments if _matches(selector, _pod_labels(d))] == [
            budget["metadata"]["name"]
        ]
    for policy in of_kind(objects, "NetworkPolicy"):
        assert any(
            _matches(policy["spec"]["podSelector"]["matchLabels"], _pod_labels(d)) for d in deployments
        )
        for rule in policy["spec"]["ingress"]:
            for source in rule.get("from", []):
                if "podSelector" in source:
                    gateway = one(objects, "Deployment", GATEWAY)
                    assert _matches(source["podSelector"]["matchLabels"], _pod_labels(gateway))
    for monitor in of_kind(objects, "ServiceMonitor"):
        (service,) = [
            s
            for s in of_kind(objects, "Service")
            if _matches(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
        ]
        assert service["metadata"]["name"] == GATEWAY
        assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {
            p["name"] for p in service["spec"]["ports"]
        }
    for monitor in of_kind(objects, "PodMonitor"):
        scraped = [
            d for d in deployments if _matches(monitor["spec"]["selector"]["matchLabels"], _pod_labels(d))
        ]
        assert scraped == _runtimes(objects)
        for runtime in scraped:
            ports = {p["name"] for c in containers(runtime) for p in c["ports"]}
            assert {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]} <= ports
    names = {d["metadata"]["name"] for d in deployments}
    for scaler in [*of_kind(objects, "HorizontalPodAutoscaler"), *of_kind(objects, "ScaledObject")]:
        assert scaler["spec"]["scaleTargetRef"]["name"] in names


def test_ports_agree_with_the_config_and_the_containers(objects: list[Manifest]) -> None:
    _, config = _gateway_config(objects)
    gateway = one(objects, "Deployment", GATEWAY)
    (container,) = containers(gateway)
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container_ports == {"http": config.gateway.http_port, "grpc": config.gateway.grpc_port}
    service = one(objects, "Service", GATEWAY)
    assert {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        "http": (config.gateway.http_port, "http"),
        "grpc": (config.gateway.grpc_port, "grpc"),
    }
    assert config.gateway.host == "0.0.0.0"  # the pod IP, not loopback

    namespace = gateway["metadata"]["namespace"]
    runtimes = _runtimes(objects)
    hosted = {r.name: r.address for r in config.runtimes}
    assert sorted(hosted) == sorted(_pod_labels(d)[RUNTIME_LABEL] for d in runtimes)
    for deployment in runtimes:
        name = deployment["metadata"]["name"]
        (container,) = containers(deployment)
        grpc_port = {p["name"]: p["containerPort"] for p in container["ports"]}["grpc"]
        assert int(_flag(container["args"], "port")) == grpc_port
        service = one(objects, "Service", name)
        assert service["spec"]["clusterIP"] == "None"  # headless: DNS lists every ready pod
        (port,) = service["spec"]["ports"]
        assert (port["port"], port["targetPort"]) == (grpc_port, "grpc")
        # The gateway reaches it by that Service's DNS name, on that port.
        address = hosted[_pod_labels(deployment)[RUNTIME_LABEL]]
        assert address == f"dns:///{name}.{namespace}.svc.cluster.local:{grpc_port}"
        # ctx.invoke from the pod goes to the gateway's gRPC Service.
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert (
            env["TOOLMESH_MESH_ADDRESS"]
            == f"{GATEWAY}.{namespace}.svc.cluster.local:{config.gateway.grpc_port}"
        )


def test_probes(objects: list[Manifest]) -> None:
    (gateway,) = containers(one(objects, "Deployment", GATEWAY))
    assert gateway["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert gateway["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    for deployment in _runtimes(objects):
        (container,) = containers(deployment)
        grpc_port = {p["name"]: p["containerPort"] for p in container["ports"]}["grpc"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            # Native gRPC probes on grpc.health.v1.Health, which the pod serves.
            assert container[probe]["grpc"]["port"] == grpc_port
            assert container[probe]["grpc"]["service"] in ("", "toolmesh.v1.Runtime")
        # A draining pod (NOT_SERVING) is never restarted before its drain ends.
        liveness = container["livenessProbe"]
        drain = float(_flag(container["args"], "drain-grace"))
        assert liveness["periodSeconds"] * liveness["failureThreshold"] > drain


def test_pods_are_locked_down(objects: list[Manifest]) -> None:
    for deployment in of_kind(objects, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"] == {"drop": ["ALL"]}
            for bound in ("requests", "limits"):
                assert set(container["resources"][bound]) == {"cpu", "memory"}
            # The root filesystem is read-only: /tmp is writable (and the gateway's data volume).
            assert "/tmp" in {mount["mountPath"] for mount in container["volumeMounts"]}


def test_runtime_pods_outlive_their_drain(objects: list[Manifest]) -> None:
    for deployment in _runtimes(objects):
        (container,) = containers(deployment)
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        drain = float(_flag(container["args"], "drain-grace"))
        assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > pre_stop + drain


def test_the_config_checksum_is_the_configs(objects: list[Manifest]) -> None:
    text, _ = _gateway_config(objects)
    template = one(objects, "Deployment", GATEWAY)["spec"]["template"]
    expected = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert template["metadata"]["annotations"][CONFIG_CHECKSUM] == expected, (
        "the gateway's config changed: set the checksum annotation to " + expected
    )
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == GATEWAY


def test_one_image_and_the_role_is_the_command(objects: list[Manifest]) -> None:
    images = {c["image"] for d in of_kind(objects, "Deployment") for c in containers(d)}
    assert len(images) == 1
    (gateway,) = containers(one(objects, "Deployment", GATEWAY))
    assert gateway["args"][:3] == ["up", "--config", "/etc/toolmesh/toolmesh.toml"]
    for deployment in _runtimes(objects):
        (container,) = containers(deployment)
        assert container["args"][0] == "runtime" and _flag(container["args"], "host") == "0.0.0.0"


def test_autoscaling_matches_the_profile(objects: list[Manifest]) -> None:
    deployments = of_kind(objects, "Deployment")
    scaled = of_kind(objects, "ScaledObject")
    if not scaled:  # base, dev, render --profile dev: one replica each, no autoscaler at all
        assert [d["spec"]["replicas"] for d in deployments] == [1] * len(deployments)
        assert not of_kind(objects, "HorizontalPodAutoscaler")
        return
    assert all("replicas" not in d["spec"] for d in deployments)  # the autoscalers own the counts
    (hpa,) = of_kind(objects, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == GATEWAY and hpa["spec"]["minReplicas"] >= 2
    namespace = deployments[0]["metadata"]["namespace"]
    runtimes = {d["metadata"]["name"]: _pod_labels(d)[RUNTIME_LABEL] for d in _runtimes(objects)}
    assert sorted(s["spec"]["scaleTargetRef"]["name"] for s in scaled) == sorted(runtimes)
    for scaled_object in scaled:
        runtime = runtimes[scaled_object["spec"]["scaleTargetRef"]["name"]]
        spec = scaled_object["spec"]
        # The CRD's own rule (a CEL expression, which the schema check above cannot run).
        assert 0 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
        assert isinstance(spec["cooldownPeriod"], int) and spec["cooldownPeriod"] > 0
        (trigger,) = scaled_object["spec"]["triggers"]
        assert trigger["type"] == "prometheus"
        query = trigger["metadata"]["query"]
        selector = f'{{namespace="{namespace}",runtime="{runtime}"}}'
        for metric in (PENDING_METRIC, INFLIGHT_METRIC):
            assert f"sum({metric}{selector}) or vector(0)" in query
        # Any held call (> 0) wakes it.
        assert trigger["metadata"]["activationThreshold"] == "0"
    budgets = {
        b["spec"]["selector"]["matchLabels"].get(RUNTIME_LABEL)
        for b in of_kind(objects, "PodDisruptionBudget")
    }
    assert budgets == {None, *runtimes.values()}
    for budget in of_kind(objects, "PodDisruptionBudget"):
        if RUNTIME_LABEL in budget["spec"]["selector"]["matchLabels"]:
            assert "minAvailable" not in budget["spec"]  # a runtime at zero pods must not block drains


def test_the_kube_scaler_gets_exactly_the_rights_it_needs(built: dict[str, list[Manifest]]) -> None:
    objects = built["prod+kube-scaler"]
    _, config = _gateway_config(objects)
    assert config.kube_scaler.enabled
    (role,) = of_kind(objects, "Role")
    (rule,) = role["rules"]
    assert rule == {
        "apiGroups": ["apps"],
        "resources": ["deployments/scale"],
        "resourceNames": [d["metadata"]["name"] for d in _runtimes(objects)],
        "verbs": ["get", "patch"],
    }
    (binding,) = of_kind(objects, "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": GATEWAY, "namespace": "toolmesh"}]
    assert one(objects, "ServiceAccount", GATEWAY)["automountServiceAccountToken"] is True
    assert (
        one(objects, "Deployment", GATEWAY)["spec"]["template"]["spec"]["automountServiceAccountToken"]
        is True
    )
    for others in ("prod", "render"):
        assert not of_kind(built[others], "Role")
        assert one(built[others], "ServiceAccount", GATEWAY)["automountServiceAccountToken"] is False


def _state_secret_ref(objects: list[Manifest]) -> dict[str, Any]:
    (gateway,) = containers(one(objects, "Deployment", GATEWAY))
    (variable,) = [v for v in gateway["env"] if v["name"] == "TOOLMESH_STATE_URL"]
    ref: dict[str, Any] = variable["valueFrom"]["secretKeyRef"]
    return ref


def test_the_state_url_comes_from_an_optional_secret(objects: list[Manifest]) -> None:
    # Without the Secret each replica keeps its own state; with it (an external Redis, or
    # components/redis) every replica shares it. Never in the ConfigMap: a URL may hold a password.
    ref = _state_secret_ref(objects)
    assert ref["key"] == "url" and ref["name"].startswith("toolmesh-state")
    text, config = _gateway_config(objects)
    assert config.state.url is None and "redis://" not in text


@pytest.mark.parametrize("build", ["prod+redis", "render-redis"])
def test_the_redis_component_is_reached_by_the_gateways_only(
    build: str, built: dict[str, list[Manifest]]
) -> None:
    import base64

    objects = built[build]
    ref = _state_secret_ref(objects)
    secret = one(objects, "Secret", ref["name"])  # kustomize's is generated, with a hash suffix
    data = secret.get("stringData") or {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    url = data["url"]
    service = one(objects, "Service", "toolmesh-redis")
    assert url == f"redis://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}/0"
    redis = one(objects, "StatefulSet", "toolmesh-redis")
    pod_labels = redis["spec"]["template"]["metadata"]["labels"]
    assert _matches(service["spec"]["selector"], pod_labels)
    assert redis["spec"]["replicas"] == 1  # one place, or the limits would not add up
    (container,) = containers(redis)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    policy = one(objects, "NetworkPolicy", "toolmesh-redis")
    assert _matches(policy["spec"]["podSelector"]["matchLabels"], pod_labels)
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]
    gateway = one(objects, "Deployment", GATEWAY)
    assert _matches(source["podSelector"]["matchLabels"], _pod_labels(gateway))
    # No gateway-side selector picks up the Redis pod.
    for other in of_kind(objects, "Service") + of_kind(objects, "PodDisruptionBudget"):
        if other["metadata"]["name"] != "toolmesh-redis":
            selector = other["spec"].get("selector", {})
            selector = selector.get("matchLabels", selector)
            assert not _matches(selector, pod_labels), other["metadata"]["name"]


def test_the_base_runtime_mirrors_the_default_examples_runtime(built: dict[str, list[Manifest]]) -> None:
    (deployment,) = _runtimes(built["base"])
    (container,) = containers(deployment)
    modules = tuple(arg.split("=", 1)[1] for arg in container["args"] if arg.startswith("--module="))
    assert modules == EXAMPLE_MODULES
    assert deployment["metadata"]["name"] == "toolmesh-runtime-examples"


def test_every_file_is_named_for_its_kind_and_commented() -> None:
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert len(files) > 20
    for path in files:
        text = path.read_text()
        assert text.startswith("#"), f"{path}: say what it is in a comment first"
        if path.name in ("kustomization.yaml",) or path.name.startswith("patch-"):
            continue
        kinds = set(re.findall(r"^kind: (\w+)$", text, re.MULTILINE))
        assert len(kinds) == 1, path
        assert path.name.startswith(kinds.pop().lower() + "-"), f"{path}: name it <kind>-<component>.yaml"


def test_each_overlay_lists_every_file_beside_it() -> None:
    import yaml

    for kustomization in DEPLOY.rglob("kustomization.yaml"):
        document = yaml.safe_load(kustomization.read_text())
        listed = {Path(p).name for p in document.get("resources", []) if not p.startswith("..")}
        listed |= {Path(p["path"]).name for p in document.get("patches", [])}
        present = {p.name for p in kustomization.parent.glob("*.yaml")} - {"kustomization.yaml"}
        assert listed == present, f"{kustomization}: files not used or missing"
