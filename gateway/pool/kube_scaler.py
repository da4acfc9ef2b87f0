"""Waking a runtime scaled to zero through the Kubernetes API (optional: ``[kube_scaler]``).

On a cluster, KEDA wakes a sleeping runtime when the gateway's
`toolmesh_pending_requests` shows a held call, which takes a Prometheus scrape
and a KEDA poll. With ``[kube_scaler] enabled = true`` the gateway's activator
also calls `KubeScaler.wake`, which reads the runtime Deployment's scale
subresource and, only when it is at 0 replicas, sets it to 1: a merge patch
that carries the resourceVersion it read, so the API server refuses it (409) if
anyone changed the count in between, and it never overrides a count KEDA or a
person chose. Concurrent wakes for one runtime share one request, and a runtime
is asked about at most once per `min_interval`: a burst of held calls makes one
PATCH.

Failures (no RBAC, API unreachable, a missing token) are logged, never raised:
KEDA remains the path that wakes the runtime, just later. Needs the Role that
``toolmesh deploy render`` writes when the section is enabled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from toolmesh.config import ConfigError, KubeScalerConfig
from toolmesh.deploy.names import runtime_resource

log = logging.getLogger("toolmesh.kube_scaler")

#: Set in every pod by the kubelet: where the API server is.
HOST_ENV = "KUBERNETES_SERVICE_HOST"
PORT_ENV = "KUBERNETES_SERVICE_PORT"
MERGE_PATCH = "application/merge-patch+json"


class KubeScaler:
    """Scales runtime Deployments from 0 to 1 through ``deployments/{name}/scale``."""

    def __init__(
        self,
        api_url: str,
        namespace: str,
        token_path: str | Path,
        *,
        verify: ssl.SSLContext | bool = True,
        min_interval: float = 5.0,
        timeout: float = 5.0,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.namespace = namespace
        self._token_path = Path(token_path)
        self._min_interval = min_interval
        self._client = httpx.AsyncClient(verify=verify, timeout=timeout)
        self._asked: dict[str, float] = {}
        self._running: dict[str, asyncio.Future[None]] = {}

    @classmethod
    def from_config(cls, config: KubeScalerConfig, environ: Mapping[str, str]) -> KubeScaler:
        """The scaler for a gateway pod: the API server from the pod's environment (unless
        `api_url` is set), its namespace and CA from the service account's files."""
        api_url = config.api_url
        if not api_url:
            host, port = environ.get(HOST_ENV), environ.get(PORT_ENV)
            if not host or not port:
                raise ConfigError(
                    f"kube_scaler: enabled, but {HOST_ENV}/{PORT_ENV} are not set (not in a Kubernetes "
                    "pod?); set kube_scaler.api_url"
                )
            api_url = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        namespace = config.namespace
        if not namespace:
            namespace_file = Path(config.token_path).with_name("namespace")
            try:
                namespace = namespace_file.read_text().strip()
            except OSError as exc:
                raise ConfigError(
                    f"kube_scaler: cannot read the pod's namespace from {namespace_file} ({exc.strerror}); "
                    "set kube_scaler.namespace"
                ) from None
        verify: ssl.SSLContext | bool = True
        if api_url.startswith("https://"):
            try:
                verify = ssl.create_default_context(cafile=config.ca_path)
            except OSError as exc:
                raise ConfigError(f"kube_scaler: cannot read the CA at {config.ca_path} ({exc})") from None
        return cls(
            api_url,
            namespace,
            config.token_path,
            verify=verify,
            min_interval=config.min_interval,
            timeout=config.timeout,
        )

    async def wake(self, runtime: str) -> None:
        """Make sure `runtime` has at least one replica; returns when the API has answered
        (or at once, when this runtime was asked about less than `min_interval` ago)."""
        running = self._running.get(runtime)
        if running is None:
            now = time.monotonic()
            asked = self._asked.get(runtime)
            if asked is not None and now - asked < self._min_interval:
                return
            self._asked[runtime] = now
            running = asyncio.ensure_future(self._scale_from_zero(runtime))
            self._running[runtime] = running
            running.add_done_callback(lambda _: self._running.pop(runtime, None))
        # A waiter that is cancelled must not cancel the request the others wait for.
        await asyncio.shield(running)

    def _scale_url(self, runtime: str) -> str:
        deployment = runtime_resource(runtime)
        return f"{self.api_url}/apis/apps/v1/namespaces/{self.namespace}/deployments/{deployment}/scale"

    async def _scale_from_zero(self, runtime: str) -> None:
        url = self._scale_url(runtime)
        try:
            # Re-read on every request: the kubelet rotates projected tokens.
            token = (await asyncio.to_thread(self._token_path.read_text)).strip()
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
            reply = await self._client.get(url, headers=headers)
            if reply.status_code != 200:
                self._refused(runtime, "read", reply)
                return
            scale = reply.json()
            if scale.get("spec", {}).get("replicas", 0) > 0:
                return
            patch = {
                "metadata": {"resourceVersion": scale["metadata"]["resourceVersion"]},
                "spec": {"replicas": 1},
            }
            reply = await self._client.patch(
                url, content=json.dumps(patch), headers={**headers, "Content-Type": MERGE_PATCH}
            )
        except (OSError, httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning(
                "could not wake runtime %r through the Kubernetes API: %s", runtime, exc or type(exc).__name__
            )
            return
        if reply.status_code == 409:
            # The count changed since we read it: someone else (KEDA) is scaling it.
            log.info("runtime %r was rescaled meanwhile; leaving its count alone", runtime)
        elif reply.is_success:
            log.info("woke runtime %r: scaled %s to 1 replica", runtime, runtime_resource(runtime))
        else:
            self._refused(runtime, "scale", reply)

    def _refused(self, runtime: str, action: str, reply: httpx.Response) -> None:
        try:
            body = reply.json()
        except ValueError:
            body = None
        # The API server explains itself in a Status object's `message`.
        reason = str((body.get("message") if isinstance(body, dict) else None) or reply.text)
        deployment = runtime_resource(runtime)
        log.warning(
            "could not %s runtime %r's Deployment %s: HTTP %d: %s",
            action,
            runtime,
            deployment,
            reply.status_code,
            reason[:200],
        )

    async def close(self) -> None:
        await self._client.aclose()
