"""`toolmesh deploy render`: the Kubernetes manifests for the runtimes of a toolmesh.toml.

Every object is a copy of a file in this folder's kustomize tree, retargeted. The
`examples` runtime's Deployment, headless Service, ScaledObject and
PodDisruptionBudget become one set per ``[[runtimes]]`` entry with `modules`; the
gateway's ConfigMap carries a toolmesh.toml in which those runtimes are
``dns:///<service>.<namespace>.svc.<domain>:<port>`` addresses, and its
Deployment the checksum of that text. Runtimes given by `address` stay as they
are: someone else runs them.

    files = render(load_config("toolmesh.toml"), RenderOptions(namespace="tools"))
    write(files, Path("k8s"))          # then: kubectl apply -k k8s
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from toolmesh.config import ConfigError, MeshConfig, RuntimeConfig
from toolmesh.deploy import toml_writer
from toolmesh.deploy.names import (
    CONFIG_CHECKSUM,
    DEFAULT_CLUSTER_DOMAIN,
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    DEFAULT_PROMETHEUS_URL,
    GATEWAY,
    IMAGE_WORKDIR,
    MAX_NAME,
    PROFILES,
    RUNTIME_LABEL,
    runtime_address,
    runtime_resource,
    service_host,
)
from toolmesh.runtimes.pod.pod_env import MESH_ADDRESS_ENV, POD_TOKEN_ENV

Manifest = dict[str, Any]

_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")

#: The gateway metrics KEDA scales runtimes on (label `runtime`).
PENDING_METRIC = "toolmesh_pending_requests"
INFLIGHT_METRIC = "toolmesh_inflight_requests"
#: Seconds between the end of a runtime's or the gateway's drain and the kubelet's SIGKILL.
SHUTDOWN_MARGIN = 15
#: The Secret whose entries become the gateway's environment: `key_env` API keys, and the chat
#: upstream's and the router LLM's `api_key_env`.
KEYS_SECRET = "toolmesh-keys"
#: The runtime the templates describe.
TEMPLATE_RUNTIME = "examples"
#: The router's paths: those beside the local config name files in the image's working
#: directory, as a runtime's `catalog` does.
_ROUTER_PATHS = ("cache_dir", "data_dir", "model", "tokenizer")
#: The runtime flags that come from a [[runtimes]] entry, by its field.
_RUNTIME_FLAGS = {
    "--timeout": "timeout",
    "--max-inflight": "max_inflight",
    "--workers": "workers",
    "--drain-grace": "drain_grace",
    "--max-result-bytes": "max_result_bytes",
}


@dataclass(frozen=True)
class RenderOptions:
    """Where and how the manifests run: `toolmesh deploy render`'s options."""

    image: str = DEFAULT_IMAGE
    namespace: str = DEFAULT_NAMESPACE
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    prometheus_url: str = DEFAULT_PROMETHEUS_URL
    profile: str = "prod"


def _template(path: str) -> Manifest:
    text = resources.files("toolmesh.deploy").joinpath(path).read_text()
    loaded: Manifest = yaml.safe_load(text)
    return loaded


def config_checksum(toml_text: str) -> str:
    """The pod-template annotation value for a gateway config."""
    return "sha256:" + hashlib.sha256(toml_text.encode()).hexdigest()


def scaling_query(runtime: str, namespace: str) -> str:
    """KEDA's Prometheus query for a runtime: calls held for it plus calls running on it,
    over every gateway pod; 0 (not "no data") before the first call."""
    selector = f'{{namespace="{namespace}",runtime="{runtime}"}}'
    return " + ".join(
        f"(sum({metric}{selector}) or vector(0))" for metric in (PENDING_METRIC, INFLIGHT_METRIC)
    )


def _number(value: float) -> str:
    # Integers as they are: "{:g}" would write 16777216 as 1.67772e+07.
    return str(value) if isinstance(value, int) else f"{value:g}"


def _check(config: MeshConfig, options: RenderOptions) -> None:
    problems = []
    if options.profile not in PROFILES:
        problems.append(f"profile must be one of {', '.join(PROFILES)}, got {options.profile!r}")
    if not _DNS_LABEL.match(options.namespace):
        problems.append(
            f"namespace {options.namespace!r} must be a DNS label (lowercase letters, digits, '-')"
        )
    if not options.image.strip():
        problems.append("image must not be empty")
    for field in ("http_port", "grpc_port"):
        if getattr(config.gateway, field) == 0:
            problems.append(f"gateway.{field}: a Service needs a fixed port, not 0")
    for index, runtime in enumerate(config.runtimes):
        if runtime.address is None and len(runtime_resource(runtime.name)) > MAX_NAME:
            limit = MAX_NAME - len(runtime_resource(""))
            problems.append(
                f"runtimes.{index}: name {runtime.name!r} is too long for Kubernetes "
                f"(at most {limit} characters, as {runtime_resource('')}<name> names a Service)"
            )
    if config.kube_scaler.enabled and not any(r.address is None for r in config.runtimes):
        problems.append("kube_scaler: enabled, but no runtime has `modules`: there is nothing to scale")
    if problems:
        raise ConfigError("; ".join(problems))


def _in_image(path: Path, directory: Path | None) -> str:
    """Where a file of the local config (relative, or resolved beside it) is in the image."""
    if directory is not None and path.is_relative_to(directory):
        path = path.relative_to(directory)
    return str(path) if path.is_absolute() else f"{IMAGE_WORKDIR}/{path}"


def _remote_runtime(runtime: RuntimeConfig) -> dict[str, Any]:
    """A runtime given by `address`, as it is, except that a relative `catalog` (found beside
    the local config) names the file in the image's working directory: in the cluster the
    config is a ConfigMap mounted elsewhere."""
    document = runtime.model_dump(mode="json", exclude_defaults=True)
    if runtime.catalog is not None and not Path(runtime.catalog).expanduser().is_absolute():
        document["catalog"] = f"{IMAGE_WORKDIR}/{runtime.catalog}"
    return document


def cluster_toml(config: MeshConfig, options: RenderOptions) -> str:
    """The gateway's toolmesh.toml inside the cluster: `config` with each runtime that has
    `modules` replaced by the address of its headless Service, listening on every interface."""
    gateway = config.gateway.model_dump(mode="json", exclude_defaults=True)
    gateway.update(host="0.0.0.0", http_port=config.gateway.http_port, grpc_port=config.gateway.grpc_port)
    # Clients in the cluster address the gateway by its Service's names (the Host check).
    cluster = service_host(GATEWAY, options.namespace, options.cluster_domain)
    service_names = [GATEWAY, f"{GATEWAY}.{options.namespace}", f"{GATEWAY}.{options.namespace}.svc", cluster]
    gateway["allowed_hosts"] = [*service_names, *config.gateway.allowed_hosts]
    runtimes = [
        {
            "name": r.name,
            "address": runtime_address(r.name, options.namespace, options.cluster_domain),
            # The runtime's pods require the token of the `toolmesh-pods` Secret, which the
            # gateway's Deployment puts in this variable.
            "token_env": POD_TOKEN_ENV,
            # The gateway reads the functions from the modules (its image has them), so it
            # knows the catalog while KEDA keeps the runtime at zero pods.
            "modules": list(r.modules),
        }
        if r.address is None
        else _remote_runtime(r)
        for r in config.runtimes
    ]
    document: dict[str, Any] = {"gateway": gateway, "runtimes": runtimes}
    if config.keys:
        document["keys"] = [k.model_dump(mode="json", exclude_defaults=True) for k in config.keys]
    if config.kube_scaler.enabled:
        document["kube_scaler"] = config.kube_scaler.model_dump(mode="json", exclude_defaults=True)
    # Every other section as written (what it leaves out is its default there too), so that
    # nothing the config turns on is silently off in the cluster.
    for section in ("mcp", "chat"):
        written = getattr(config, section).model_dump(mode="json", exclude_defaults=True)
        if written:
            document[section] = written
    router = config.router.model_dump(mode="json", exclude_defaults=True)
    for field in _ROUTER_PATHS:
        if field in router:
            router[field] = _in_image(Path(router[field]), config.directory)
    if router:
        document["router"] = router
    document["jobs"] = _cluster_jobs(config)
    header = (
        "toolmesh.toml for the gateway on Kubernetes, written by `toolmesh deploy render`.\n"
        "Runtimes with modules run as Deployments of their own, reached at their headless Services."
    )
    return toml_writer.dumps(document, header)


#: Where a gateway replica keeps its SQLite jobs: its one writable volume (survives restarts
#: of its container, not of its pod).
CLUSTER_JOBS_PATH = "/tmp/toolmesh/jobs.sqlite3"


def _cluster_jobs(config: MeshConfig) -> dict[str, Any]:
    """The `[jobs]` section in the cluster. SQLite jobs belong to one gateway replica, so a job
    submitted through one replica is not found through another: they are off unless the
    config turns them on (`enabled = true`, e.g. with one replica)."""
    jobs = config.jobs.model_dump(mode="json", exclude_defaults=True)
    jobs.pop("path", None)
    if "enabled" not in config.jobs.model_fields_set:
        return {**jobs, "enabled": False}
    return {**jobs, "path": CLUSTER_JOBS_PATH} if config.jobs.enabled else jobs


def _retarget(node: Any, runtime: str) -> Any:
    """A copy of a template object for the examples runtime, made for `runtime`."""
    if isinstance(node, dict):
        return {
            key: runtime if key == RUNTIME_LABEL else _retarget(value, runtime) for key, value in node.items()
        }
    if isinstance(node, list):
        return [_retarget(item, runtime) for item in node]
    return runtime_resource(runtime) if node == runtime_resource(TEMPLATE_RUNTIME) else node


def _container(deployment: Manifest) -> dict[str, Any]:
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def secret_variables(config: MeshConfig) -> list[str]:
    """The gateway's environment variables that hold secrets (API keys, the chat upstream's
    and the router LLM's keys, the jobs' callback secret): each comes from the `toolmesh-keys`
    Secret, never the ConfigMap."""
    found = [key.key_env for key in config.keys]
    found.append(config.chat.api_key_env)
    found.append(config.router.llm.api_key_env if config.router.llm is not None else None)
    found.append(config.jobs.callback_secret_env)
    return list(dict.fromkeys(v for v in found if v is not None))


def _gateway(config: MeshConfig, options: RenderOptions, toml_text: str) -> dict[str, Manifest]:
    account = _template("base/serviceaccount-gateway.yaml")
    config_map = _template("base/configmap-gateway.yaml")
    config_map["data"]["toolmesh.toml"] = toml_text
    deployment = _template("base/deployment-gateway.yaml")
    pod = deployment["spec"]["template"]
    pod["metadata"]["annotations"][CONFIG_CHECKSUM] = config_checksum(toml_text)
    container = _container(deployment)
    container["image"] = options.image
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = pre_stop + math.ceil(config.gateway.drain_grace) + SHUTDOWN_MARGIN
    pod["spec"]["terminationGracePeriodSeconds"] = grace
    ports = {"http": config.gateway.http_port, "grpc": config.gateway.grpc_port}
    for port in container["ports"]:
        port["containerPort"] = ports[port["name"]]
    for variable in secret_variables(config):
        secret = {"name": KEYS_SECRET, "key": variable}
        container["env"].append({"name": variable, "valueFrom": {"secretKeyRef": secret}})
    service = _template("base/service-gateway.yaml")
    for port in service["spec"]["ports"]:
        port["port"] = ports[port["name"]]
    return {
        "serviceaccount-gateway.yaml": account,
        "configmap-gateway.yaml": config_map,
        "deployment-gateway.yaml": deployment,
        "service-gateway.yaml": service,
    }


def _runtime_deployment(runtime: RuntimeConfig, config: MeshConfig, options: RenderOptions) -> Manifest:
    deployment: Manifest = _retarget(
        _template(f"base/deployment-runtime-{TEMPLATE_RUNTIME}.yaml"), runtime.name
    )
    pod = deployment["spec"]["template"]["spec"]
    container = _container(deployment)
    container["image"] = options.image
    args = []
    for arg in container["args"]:
        flag = arg.partition("=")[0]
        if flag == "--module":
            continue
        if flag in _RUNTIME_FLAGS:
            arg = f"{flag}={_number(getattr(runtime, _RUNTIME_FLAGS[flag]))}"
        elif flag == "--log-level":
            arg = f"{flag}={runtime.log_level}"
        args.append(arg)
    if runtime.max_memory_mb is not None:
        # The pod holds itself to the limit (RLIMIT_AS, so a call past it fails alone); the
        # container's limit is the kernel's backstop for memory outside its address space.
        args.append(f"--max-memory-mb={runtime.max_memory_mb}")
        container["resources"]["limits"]["memory"] = f"{runtime.max_memory_mb}Mi"
    container["args"] = args + [f"--module={module}" for module in runtime.modules]
    mesh = f"{service_host(GATEWAY, options.namespace, options.cluster_domain)}:{config.gateway.grpc_port}"
    env = [{**item, "value": mesh} if item["name"] == MESH_ADDRESS_ENV else item for item in container["env"]]
    env = [item for item in env if item["name"] not in runtime.env]
    container["env"] = env + [{"name": name, "value": value} for name, value in runtime.env.items()]
    # The kubelet's SIGKILL must come after preStop and the whole drain.
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    pod["terminationGracePeriodSeconds"] = pre_stop + math.ceil(runtime.drain_grace) + SHUTDOWN_MARGIN
    return deployment


def _runtime(runtime: RuntimeConfig, config: MeshConfig, options: RenderOptions) -> dict[str, Manifest]:
    name = runtime.name
    files = {
        f"deployment-runtime-{name}.yaml": _runtime_deployment(runtime, config, options),
        f"service-runtime-{name}.yaml": _retarget(
            _template(f"base/service-runtime-{TEMPLATE_RUNTIME}.yaml"), name
        ),
    }
    if options.profile == "prod":
        scaled: Manifest = _retarget(
            _template(f"overlays/prod/scaledobject-runtime-{TEMPLATE_RUNTIME}.yaml"), name
        )
        trigger = scaled["spec"]["triggers"][0]["metadata"]
        trigger["query"] = scaling_query(name, options.namespace)
        trigger["serverAddress"] = options.prometheus_url
        files[f"scaledobject-runtime-{name}.yaml"] = scaled
        files[f"poddisruptionbudget-runtime-{name}.yaml"] = _retarget(
            _template(f"overlays/prod/poddisruptionbudget-runtime-{TEMPLATE_RUNTIME}.yaml"), name
        )
    return files


#: What overlays/prod adds for the mesh as a whole (per-runtime files come from `_runtime`).
_PROD_SHARED = (
    "horizontalpodautoscaler-gateway.yaml",
    "poddisruptionbudget-gateway.yaml",
    "networkpolicy-gateway.yaml",
    "networkpolicy-runtimes.yaml",
    "servicemonitor-gateway.yaml",
    "podmonitor-runtimes.yaml",
)


def _kube_scaler(files: dict[str, Manifest], hosted: list[RuntimeConfig]) -> None:
    """RBAC for the gateway's kube-scaler: scale rights on exactly the runtime Deployments."""
    role = _template("components/kube-scaler/role-gateway-scaler.yaml")
    role["rules"][0]["resourceNames"] = [runtime_resource(r.name) for r in hosted]
    files["role-gateway-scaler.yaml"] = role
    files["rolebinding-gateway-scaler.yaml"] = _template(
        "components/kube-scaler/rolebinding-gateway-scaler.yaml"
    )
    files["serviceaccount-gateway.yaml"]["automountServiceAccountToken"] = True
    files["deployment-gateway.yaml"]["spec"]["template"]["spec"]["automountServiceAccountToken"] = True


def render(config: MeshConfig, options: RenderOptions | None = None) -> dict[str, Manifest]:
    """Every object for `config`, by file name (`<kind>-<component>.yaml`), in apply order.

    Raises ConfigError when the config cannot run on Kubernetes as it is (a port 0, a
    runtime name too long for a Service).
    """
    options = options or RenderOptions()
    _check(config, options)
    toml_text = cluster_toml(config, options)
    namespace = _template("base/namespace-toolmesh.yaml")
    namespace["metadata"]["name"] = options.namespace
    files: dict[str, Manifest] = {f"namespace-{options.namespace}.yaml": namespace}
    files.update(_gateway(config, options, toml_text))
    hosted = [r for r in config.runtimes if r.address is None]
    for runtime in hosted:
        files.update(_runtime(runtime, config, options))
    if options.profile == "prod":
        files.update({name: _template(f"overlays/prod/{name}") for name in _PROD_SHARED})
        for manifest in files.values():
            if manifest["kind"] == "Deployment":
                del manifest["spec"]["replicas"]  # the autoscalers own the counts
    if config.kube_scaler.enabled:
        _kube_scaler(files, hosted)
    for manifest in files.values():
        if manifest["kind"] != "Namespace":
            metadata = manifest["metadata"]
            manifest["metadata"] = {"name": metadata.pop("name"), "namespace": options.namespace, **metadata}
        for subject in manifest.get("subjects", ()):
            subject["namespace"] = options.namespace
    return files


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the ConfigMap's toolmesh.toml) as literal blocks, readable as files."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def to_yaml(manifest: Manifest) -> str:
    return yaml.dump(manifest, Dumper=_Dumper, sort_keys=False, width=120)


def write(files: Mapping[str, Manifest], directory: Path, source: str = "toolmesh.toml") -> list[Path]:
    """Write each object to its file in `directory`, plus a kustomization.yaml listing them."""
    directory.mkdir(parents=True, exist_ok=True)
    header = f"# Written by `toolmesh deploy render` from {source}: edit that, then render again.\n"
    written = []
    for name, manifest in files.items():
        path = directory / name
        path.write_text(header + to_yaml(manifest))
        written.append(path)
    namespace = next(m["metadata"]["name"] for m in files.values() if m["kind"] == "Namespace")
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": namespace,
        "resources": list(files),
    }
    path = directory / "kustomization.yaml"
    path.write_text(
        header + "# Apply with: kubectl apply -k " + str(directory) + "\n" + to_yaml(kustomization)
    )
    return [*written, path]


def stream(files: Mapping[str, Manifest]) -> str:
    """All objects as one multi-document YAML stream (for `kubectl apply -f -`)."""
    return "---\n".join(to_yaml(manifest) for manifest in files.values())
