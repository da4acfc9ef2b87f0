"""Prometheus' way in: the gateway's metrics, its pods' metrics, and where to find them all.

GET /metrics                              the gateway's own series
GET /v1/metrics/targets                   Prometheus HTTP service discovery (`http_sd_configs`):
                                          the gateway and every live pod it runs
GET /v1/metrics/pods/{runtime}/{pod}      one pod's series, fetched from its Unix socket

The pods the gateway starts serve metrics on Unix sockets only (no other local user may reach
them), so the gateway hands them on; the discovery document points Prometheus at those paths
and labels each pod's target with its `runtime` and `pod`, which every series scraped from it
then carries. On the HTTP port these need a key with the "@metrics" scope (or an open
gateway); the `[gateway] metrics_port` listener serves the same routes with no key.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.gateway.core.auth import METRICS
from toolmesh.gateway.core.backend import PodRef
from toolmesh.gateway.core.mesh import Mesh
from toolmesh.gateway.http.adapt import caller, json_response

TARGETS_PATH = "/v1/metrics/targets"
POD_PATH = "/v1/metrics/pods/{runtime}/{pod}"


def metrics_routes(mesh: Mesh, *, keyless: bool = False) -> list[Route]:
    """The routes; `keyless` for a listener of their own (`[gateway] metrics_port`)."""

    def allow(request: Request) -> None:
        if not keyless:
            caller(mesh, request).require(METRICS, "read the metrics")

    async def metrics(request: Request) -> Response:
        allow(request)
        return Response(generate_latest(mesh.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def targets(request: Request) -> Response:
        allow(request)
        # Where Prometheus reached this document is where it reaches the metrics (Host was checked).
        here = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
        groups: list[dict[str, object]] = [
            {"targets": [here], "labels": {"__metrics_path__": "/metrics", "toolmesh_role": "gateway"}}
        ]
        for pod in mesh.pool.pods():
            path = POD_PATH.format(runtime=pod.runtime, pod=pod.pod)
            labels = {
                "__metrics_path__": path,
                "toolmesh_role": "pod",
                "runtime": pod.runtime,
                "pod": pod.pod,
            }
            groups.append({"targets": [here], "labels": labels})
        return json_response(groups)

    async def pod_metrics(request: Request) -> Response:
        allow(request)
        pod = PodRef(request.path_params["runtime"], request.path_params["pod"])
        exposition = await mesh.pool.pod_metrics(pod)
        if exposition is None:
            raise HTTPException(404, f"no live pod {pod.pod!r} of runtime {pod.runtime!r}")
        return Response(exposition, media_type=CONTENT_TYPE_LATEST)

    return [
        Route("/metrics", metrics, methods=["GET"]),
        Route(TARGETS_PATH, targets, methods=["GET"]),
        Route(POD_PATH, pod_metrics, methods=["GET"]),
    ]
