"""The names and defaults of toolmesh's Kubernetes objects, shared by the renderer, the
kube-scaler and the CLI (light: no YAML, nothing a pod would not load anyway)."""

from __future__ import annotations

from toolmesh._version import __version__
from toolmesh.protocol.defaults import DEFAULT_METRICS_PORT, DEFAULT_PORT

DEFAULT_IMAGE = f"toolmesh:{__version__}"
#: Prometheus as the Prometheus Operator names it, in the "monitoring" namespace.
DEFAULT_PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090"
#: "prod": the autoscaled, guarded set of deploy/overlays/prod; "dev": deploy/base alone,
#: one replica of everything.
PROFILES = ("prod", "dev")

#: The namespace of deploy/base, and `toolmesh deploy render`'s default.
DEFAULT_NAMESPACE = "toolmesh"
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
#: The gateway's Deployment, Service, ConfigMap and ServiceAccount.
GATEWAY = "toolmesh-gateway"
#: A runtime's Deployment, headless Service and ScaledObject are this plus its name.
RUNTIME_PREFIX = "toolmesh-runtime-"
#: The pod label that says which runtime a pod serves.
RUNTIME_LABEL = "toolmesh/runtime"
#: Pod-template annotation with the SHA-256 of the gateway's toolmesh.toml.
CONFIG_CHECKSUM = "toolmesh/config-checksum"
#: Ports inside runtime pods (every pod has its own IP, so the defaults never clash).
RUNTIME_PORT = DEFAULT_PORT
RUNTIME_METRICS_PORT = DEFAULT_METRICS_PORT
#: The image's working directory (Dockerfile), where images built on it put the user's files.
IMAGE_WORKDIR = "/app"
#: Where the gateway's data volume is mounted (deployment-gateway.yaml): every file the gateway
#: writes (the router's sessions and embeddings, SQLite jobs) goes here, as its root is read-only.
GATEWAY_DATA_DIR = "/var/lib/toolmesh"
#: Kubernetes Service names are DNS-1035 labels: at most 63 characters.
MAX_NAME = 63


def runtime_resource(runtime: str) -> str:
    """The Deployment (and Service, ScaledObject...) of a runtime."""
    return RUNTIME_PREFIX + runtime


def service_host(service: str, namespace: str, cluster_domain: str = DEFAULT_CLUSTER_DOMAIN) -> str:
    return f"{service}.{namespace}.svc.{cluster_domain}"


def runtime_address(
    runtime: str, namespace: str, cluster_domain: str = DEFAULT_CLUSTER_DOMAIN, port: int = RUNTIME_PORT
) -> str:
    """The gateway's gRPC target for a runtime: its headless Service, resolved to every ready pod."""
    return f"dns:///{service_host(runtime_resource(runtime), namespace, cluster_domain)}:{port}"
