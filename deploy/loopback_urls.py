"""The config's addresses that name this machine (127.0.0.1, localhost, ::1): in the cluster
each names the pod it is read in, where nothing listens. `toolmesh deploy render` warns
about each one and renders anyway (the config may be meant for a port-forward or a sidecar).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from toolmesh.config import MeshConfig

#: What to use instead, by kind of setting.
_SERVICE = "the service's address as pods reach it (its Service's DNS name or a public URL)"
_INSTEAD = {
    "state": "a Redis the pods reach (redis://<service>.<namespace>.svc:6379/0), or render's --redis",
    "runtime": "the runtime's Service (dns:///<service>.<namespace>.svc.cluster.local:50061), "
    "or `modules` instead of `address` so that render runs it in the cluster",
    "otlp": "the collector's Service (http://<collector>.<namespace>.svc:4318)",
    "kube": "nothing: leave it out and the gateway finds the API server from inside its pod",
}


def is_loopback(host: str) -> bool:
    """Whether a host name or IP literal names the machine itself (0.0.0.0 and :: too: a
    connection to them reaches this machine)."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.partition("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _host_of(host_port: str) -> str:
    """ "host:port", "[::1]:port", "::1" or "host" -> the host."""
    if host_port.startswith("["):
        return host_port[1 : host_port.find("]")]
    return host_port.rpartition(":")[0] if host_port.count(":") == 1 else host_port


def target_hosts(target: str) -> list[str]:
    """The hosts of a URL or a gRPC target ("host:port", "dns:///host:port",
    "ipv4:a:port,b:port", "ipv6:[::1]:port"); none for a Unix socket."""
    scheme, _, rest = target.partition(":")
    if scheme in ("ipv4", "ipv6"):
        return [_host_of(address) for address in rest.split(",")]
    if scheme in ("unix", "unix-abstract"):
        return []
    if scheme == "dns":
        # "dns:host:port", "dns:///host:port" or "dns://resolver/host:port".
        return [_host_of(rest[2:].partition("/")[2] if rest.startswith("//") else rest)]
    if "://" in target:
        return [urlsplit(target).hostname or ""]
    return [_host_of(target)]


def _shown(url: str) -> str:
    """`url` without a password (never echoed)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url


def loopback_warnings(config: MeshConfig) -> list[str]:
    """One line per setting whose address is loopback: the setting, the address, and what
    to use instead."""
    scaler = config.kube_scaler
    settings: list[tuple[str, str | None, str]] = [
        ("[state] url", config.state.url, _INSTEAD["state"]),
        ("[chat] upstream_url", config.chat.upstream_url, _SERVICE),
        ("[router.llm] base_url", config.router.llm.base_url if config.router.llm else None, _SERVICE),
        (
            "[kube_scaler] api_url",
            scaler.api_url if scaler.enabled and scaler.api_url else None,
            _INSTEAD["kube"],
        ),
    ]
    for runtime in config.runtimes:
        where = f'[[runtimes]] "{runtime.name}"'
        settings.append((f"{where} address", runtime.address, _INSTEAD["runtime"]))
        settings.append((f"{where} base_url", runtime.base_url, _SERVICE))
        if runtime.openapi is not None and "://" in runtime.openapi:
            settings.append((f"{where} openapi", runtime.openapi, _SERVICE))
        settings.append((f"{where} mcp_url", runtime.mcp_url, _SERVICE))
        settings.append((f"{where} grpc_reflection", runtime.grpc_reflection, _SERVICE))
        # Its environment goes to its pods as is: an OTLP endpoint, a database URL...
        for name, value in runtime.env.items():
            if name.startswith("OTEL_") and name.endswith("_ENDPOINT"):
                settings.append((f"{where} env {name}", value, _INSTEAD["otlp"]))
            elif "://" in value:
                settings.append((f"{where} env {name}", value, _SERVICE))
    return [
        f"{setting} = {_shown(value)!r} is this machine: in the cluster, the pod itself; use {instead}"
        for setting, value, instead in settings
        if value is not None and any(is_loopback(host) for host in target_hosts(value))
    ]
