"""KEDA scalers for queue triggers: a runtime whose function a Redis stream or a JetStream
subject calls also scales on that queue's backlog, from zero.

A runtime's ScaledObject (overlays/prod) scales on the calls the gateways hold for it; a queue
trigger adds a scaler on the messages its consumer has not yet read, so a backlog wakes the
runtime even before the gateway turns it into calls (a paused trigger resumed, a burst):

    redis_stream   type redis-streams, `lagCount` of the trigger's consumer group (XINFO GROUPS
                   `lag`: Redis 7 or later), the only redis-streams mode that scales from zero
    nats_subject   type nats-jetstream, `lagThreshold` of the trigger's durable consumer, read
                   from the server's monitoring endpoint (port 8222 on the `nats_url` host)

The stream a JetStream scaler watches is `nats_stream`, else the one the gateway makes: set
`nats_stream` when a stream of your own captures the subject. The runtime is the one whose
name is the function's namespace ("orders.on_order" -> runtime "orders"), else the only
runtime with pods; a trigger matching neither adds no scaler (its calls still scale the
runtime through the gateway). A NOTIFY trigger has no backlog to scale on.
Credentials are not written: a Redis URL with a password, or a NATS server that needs one,
needs a TriggerAuthentication added by hand (`authenticationRef`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from toolmesh.config import MeshConfig, RuntimeConfig
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.deploy.cluster_config import cluster_project_id

#: Backlog per runtime pod the scalers size to, and the backlog above which 0 -> 1.
LAG_PER_POD = 100
ACTIVATION_LAG = 0
#: NATS's monitoring port (`nats-server -m 8222`, the Helm chart's default).
NATS_MONITORING_PORT = 8222
#: The NATS account when the server has none configured.
NATS_DEFAULT_ACCOUNT = "$G"


def runtime_of(trigger: TriggerConfig, hosted: Sequence[RuntimeConfig]) -> RuntimeConfig | None:
    """The runtime (with pods) that serves `trigger`'s function, as far as render can tell."""
    namespace, dot, _ = trigger.function.partition(".")
    if dot:
        for runtime in hosted:
            if runtime.name == namespace:
                return runtime
    return hosted[0] if len(hosted) == 1 else None


def queue_scalers(runtime: RuntimeConfig, config: MeshConfig, hosted: Sequence[RuntimeConfig]) -> list[Any]:
    """The KEDA triggers to add to `runtime`'s ScaledObject for the queue triggers calling it."""
    project = cluster_project_id(config)
    scalers: list[Any] = []
    for trigger in config.triggers:
        target = runtime_of(trigger, hosted)
        if target is None or target.name != runtime.name:
            continue
        if trigger.redis_stream is not None:
            url = trigger.redis_url or config.state.url
            if url is not None:
                scalers.append(_redis_scaler(trigger, url, project))
        elif trigger.nats_subject is not None and trigger.nats_url is not None:
            scalers.append(_nats_scaler(trigger, trigger.nats_url, project))
    return scalers


def _redis_scaler(trigger: TriggerConfig, url: str, project: str) -> dict[str, Any]:
    parts = urlsplit(url)
    database = parts.path.strip("/") or "0"
    metadata = {
        "address": f"{parts.hostname}:{parts.port or 6379}",
        "databaseIndex": database,
        "stream": trigger.redis_stream,
        # The gateways' consumer group (gateway/triggers/redis_streams.py).
        "consumerGroup": trigger.redis_group(project),
        "lagCount": str(LAG_PER_POD),
        "activationLagCount": str(ACTIVATION_LAG),
    }
    if parts.scheme == "rediss":
        metadata["enableTLS"] = "true"
    return {"type": "redis-streams", "name": f"trigger-{trigger.name}", "metadata": metadata}


def _nats_scaler(trigger: TriggerConfig, url: str, project: str) -> dict[str, Any]:
    parts = urlsplit(url)
    metadata = {
        "natsServerMonitoringEndpoint": f"{parts.hostname}:{NATS_MONITORING_PORT}",
        "account": NATS_DEFAULT_ACCOUNT,
        "stream": trigger.nats_stream or trigger.nats_stream_made(),
        "consumer": trigger.nats_consumer(project),
        "lagThreshold": str(LAG_PER_POD),
        "activationLagThreshold": str(ACTIVATION_LAG),
    }
    if parts.scheme == "tls":
        metadata["useHttps"] = "true"
    return {"type": "nats-jetstream", "name": f"trigger-{trigger.name}", "metadata": metadata}
