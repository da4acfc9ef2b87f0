"""The gateway's toolmesh.toml inside the cluster, made from the local one.

Runtimes with `modules` become the addresses of their headless Services; every other section
goes along as written, except the paths. In the cluster the config is a ConfigMap mounted at
/etc/toolmesh and the image's root filesystem is read-only, so a path beside the local config
means nothing there: the files the gateway only reads name files in the image (`/app`, its
working directory), and every file it writes goes on its data volume (`GATEWAY_DATA_DIR`, an
emptyDir unless `--data-claim` names a PersistentVolumeClaim).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolmesh import directories
from toolmesh.config import MeshConfig, RuntimeConfig
from toolmesh.deploy import toml_writer
from toolmesh.deploy.names import GATEWAY, GATEWAY_DATA_DIR, IMAGE_WORKDIR, runtime_address, service_host
from toolmesh.protocol.pod_env import POD_TOKEN_ENV

#: Every path setting the gateway writes to ("section.key"), and where it goes in the cluster:
#: on the data volume. One already there is kept. A new path setting belongs in one of these
#: three tables (tests/deploy/test_cluster_config.py fails until it is).
WRITTEN_PATHS = {
    "project.data_dir": GATEWAY_DATA_DIR,
    "router.data_dir": GATEWAY_DATA_DIR,
    "router.embeddings_dir": GATEWAY_DATA_DIR,
    "jobs.path": f"{GATEWAY_DATA_DIR}/jobs.sqlite3",
    "function_state.path": f"{GATEWAY_DATA_DIR}/function_state.sqlite3",
    "gateway.audit_file": f"{GATEWAY_DATA_DIR}/audit.jsonl",
}
#: The files the gateway only reads: a relative one (beside the local config) names the file
#: in the image's working directory, as a runtime's `catalog` does.
READ_PATHS = ("router.model", "router.tokenizer")
#: Left out in the cluster: the router's built models are the image's (its XDG_CACHE_HOME),
#: not a directory of the machine that rendered the manifests.
DROPPED_PATHS = ("router.cache_dir",)


def in_image(path: Path, directory: Path | None) -> str:
    """Where a file of the local config (relative, or resolved beside it) is in the image."""
    if directory is not None and path.is_relative_to(directory):
        path = path.relative_to(directory)
    return str(path) if path.is_absolute() else f"{IMAGE_WORKDIR}/{path}"


def on_data_volume(setting: str, path: Path | None) -> str:
    """Where a file the gateway writes goes in the cluster: kept if already on the data
    volume, else the setting's place there."""
    if path is not None and path.is_absolute() and path.is_relative_to(GATEWAY_DATA_DIR):
        return str(path)
    return WRITTEN_PATHS[setting]


def _remote_runtime(runtime: RuntimeConfig) -> dict[str, Any]:
    """A runtime given by `address` or `openapi`, as it is, except that a relative `catalog` or
    `openapi` path (found beside the local config) names the file in the image's working directory."""
    document = runtime.model_dump(mode="json", exclude_defaults=True)
    for key in ("catalog", "openapi"):
        path = document.get(key)
        is_url = path is not None and path.startswith(("http://", "https://"))
        if path is not None and not is_url and not Path(path).expanduser().is_absolute():
            document[key] = f"{IMAGE_WORKDIR}/{path}"
    return document


def _router(config: MeshConfig) -> dict[str, Any]:
    router = config.router.model_dump(mode="json", exclude_defaults=True)
    for setting in DROPPED_PATHS:
        router.pop(setting.removeprefix("router."), None)
    for setting in READ_PATHS:
        key = setting.removeprefix("router.")
        if key in router:
            router[key] = in_image(Path(router[key]), config.directory)
    # Always written: the defaults (the project's .toolmesh, ~/.local/share/toolmesh) are on the
    # image's read-only root.
    router["data_dir"] = on_data_volume("router.data_dir", config.router.data_dir)
    router["embeddings_dir"] = on_data_volume("router.embeddings_dir", config.router.embeddings_dir)
    return router


def _project(config: MeshConfig) -> dict[str, Any]:
    """The project's id, so replicas share its jobs whatever path they start from, and its data
    directory on the data volume."""
    project = config.project.model_dump(mode="json", exclude_defaults=True)
    project["data_dir"] = on_data_volume("project.data_dir", config.project.data_dir)
    if config.triggers:
        # Queue triggers' consumer names carry it, and the KEDA scalers name those consumers.
        project["id"] = cluster_project_id(config)
    return project


def cluster_project_id(config: MeshConfig) -> str:
    """The project id the cluster's gateways use: `[project] id`, else the local project's."""
    return config.project.id or directories.project_id(config.project_directory())


def cluster_toml(config: MeshConfig, cluster_domain: str, namespace: str, shared_state: bool) -> str:
    """The gateway's toolmesh.toml inside the cluster: `config` with each runtime that has
    `modules` replaced by the address of its headless Service, listening on every interface.
    `shared_state`: the replicas share a Redis (`[state] url` or render's `--redis`)."""
    gateway = config.gateway.model_dump(mode="json", exclude_defaults=True)
    gateway.update(host="0.0.0.0", http_port=config.gateway.http_port, grpc_port=config.gateway.grpc_port)
    if config.gateway.audit_file is not None:
        gateway["audit_file"] = on_data_volume("gateway.audit_file", config.gateway.audit_file)
    # Clients in the cluster address the gateway by its Service's names (the Host check).
    cluster = service_host(GATEWAY, namespace, cluster_domain)
    service_names = [GATEWAY, f"{GATEWAY}.{namespace}", f"{GATEWAY}.{namespace}.svc", cluster]
    gateway["allowed_hosts"] = [*service_names, *config.gateway.allowed_hosts]
    runtimes = [
        {
            "name": r.name,
            "address": runtime_address(r.name, namespace, cluster_domain),
            # The runtime's pods require the token of the `toolmesh-pods` Secret, which the
            # gateway's Deployment puts in this variable.
            "token_env": POD_TOKEN_ENV,
            # The gateway reads the functions from the modules (its image has them), so it
            # knows the catalog while KEDA keeps the runtime at zero pods. A stdio MCP server's
            # (`mcp_command`) are read from its pods, of which one stays up.
            "modules": list(r.modules),
        }
        if r.runs_pods
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
    for section in ("mcp", "chat", "state"):
        written = getattr(config, section).model_dump(mode="json", exclude_defaults=True)
        if written:
            document[section] = written
    if config.oauth is not None:
        document["oauth"] = config.oauth.model_dump(mode="json", exclude_defaults=True)
    document["router"] = _router(config)
    document["project"] = _project(config)
    document["jobs"] = _cluster_jobs(config, shared_state)
    if config.triggers:
        document["triggers"] = [t.model_dump(mode="json", exclude_defaults=True) for t in config.triggers]
    # Functions' state: in Redis with shared state, else in SQLite on the data volume.
    function_state = config.function_state.model_dump(mode="json", exclude_defaults=True)
    function_state["path"] = on_data_volume("function_state.path", config.function_state.path)
    document["function_state"] = function_state
    header = (
        "toolmesh.toml for the gateway on Kubernetes, written by `toolmesh deploy render`.\n"
        "Runtimes with modules run as Deployments of their own, reached at their headless Services;\n"
        f"the files the gateway writes are on its data volume, {GATEWAY_DATA_DIR}."
    )
    return toml_writer.dumps(document, header)


def _cluster_jobs(config: MeshConfig, shared_state: bool) -> dict[str, Any]:
    """The `[jobs]` section in the cluster. With Redis (`[state] url`, or `--redis`) every
    replica shares one queue, so jobs are on as anywhere else. SQLite jobs belong to one
    gateway replica, so a job submitted through one replica is not found through another:
    they are off unless the config turns them on (`enabled = true`, e.g. with one replica, or
    with the Redis URL in the `toolmesh-state` Secret, which render cannot see)."""
    jobs = config.jobs.model_dump(mode="json", exclude_defaults=True)
    jobs.pop("path", None)
    if shared_state:
        return jobs
    if "enabled" not in config.jobs.model_fields_set:
        return {**jobs, "enabled": False}
    return {**jobs, "path": on_data_volume("jobs.path", config.jobs.path)} if config.jobs.enabled else jobs
