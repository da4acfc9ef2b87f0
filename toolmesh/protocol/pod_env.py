"""The environment variables a runtime pod reads, and the one place it reads them.

A pod reads its environment once, at start-up (`read_environment(os.environ)` in
the CLI), into a `PodEnvironment`; nothing deeper in the pod looks at `os.environ`.
The gateway imports the names from here to set them for the pods it starts, and
`PodEnvironment.variables()` writes what `read_environment` reads.

Secrets travel here and never on a command line, where any user of the machine
could read them (`ps`, /proc/<pid>/cmdline).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

from toolmesh.tracing import RUNTIME_SERVICE, service_to_trace

#: The gateway's gRPC address ("host:port"), where ctx.invoke sends calls for functions
#: the pod does not host. Unset or empty: ctx.invoke reaches only the pod's own functions.
MESH_ADDRESS_ENV = "TOOLMESH_MESH_ADDRESS"
#: The mesh's internal token, which the pod presents on those calls (a Secret on a cluster).
MESH_TOKEN_ENV = "TOOLMESH_MESH_TOKEN"
#: The token callers must present to this pod (``authorization: Bearer <token>``) for any
#: Runtime call, and for /metrics. Set on pods that listen on the network (a Secret on a
#: cluster); empty for the pods a gateway starts, which listen only on Unix sockets in a
#: directory no other user can enter.
POD_TOKEN_ENV = "TOOLMESH_POD_TOKEN"

#: The runtime a pod serves, for pods the gateway does not start (a Deployment on Kubernetes
#: sets it from its runtime label). With it, the pod presents the runtime's own token, made
#: from the mesh's (`runtime_token`), so the gateway knows its runtime (ctx.state's namespace).
RUNTIME_ENV = "TOOLMESH_RUNTIME"
#: "json" or "text": how the pod writes its logs. `toolmesh up` sets it for itself, and the pods it
#: starts inherit it, so a terminal shows one format.
LOG_FORMAT_ENV = "TOOLMESH_LOG_FORMAT"

#: Every environment variable the gateway sets for a pod (it also reads OTEL_*, see
#: toolmesh/tracing.py, and LOG_FORMAT_ENV, both inherited).
POD_ENVIRONMENT = (MESH_ADDRESS_ENV, MESH_TOKEN_ENV, POD_TOKEN_ENV)


@dataclass(frozen=True, slots=True)
class PodEnvironment:
    """What a pod took from its environment at start-up."""

    mesh_address: str | None = None
    #: Kept out of the repr, so it never reaches a log line or a traceback.
    mesh_token: str = field(default="", repr=False)
    #: What callers must present to this pod; empty: nothing (see POD_TOKEN_ENV).
    pod_token: str = field(default="", repr=False)
    #: The service name the pod traces as; None: tracing is off. It comes from the standard
    #: OTEL_* variables, which a pod inherits, so `variables` does not write it.
    tracing: str | None = None
    #: How the pod logs: "json" (the default) or "text"; inherited, so `variables` leaves it alone.
    log_format: str = "json"

    def variables(self) -> dict[str, str]:
        """The environment variables that carry these values to a pod. Every one is set, empty
        for a missing value, so that nothing inherited from the parent stands in for it."""
        return {
            MESH_ADDRESS_ENV: self.mesh_address or "",
            MESH_TOKEN_ENV: self.mesh_token,
            POD_TOKEN_ENV: self.pod_token,
        }


def read_environment(environ: Mapping[str, str]) -> PodEnvironment:
    """Read a pod's variables from `environ` (the process's, at start-up; a dict in tests)."""
    mesh_token, runtime = environ.get(MESH_TOKEN_ENV, ""), environ.get(RUNTIME_ENV, "")
    if mesh_token and runtime:
        mesh_token = runtime_token(mesh_token, runtime)
    return PodEnvironment(
        mesh_address=environ.get(MESH_ADDRESS_ENV) or None,
        mesh_token=mesh_token,
        pod_token=environ.get(POD_TOKEN_ENV, ""),
        tracing=service_to_trace(environ, RUNTIME_SERVICE),
        log_format="text" if environ.get(LOG_FORMAT_ENV) == "text" else "json",
    )


def runtime_token(internal_token: str, runtime: str) -> str:
    """The token of the pods of `runtime`: ``<runtime>.<HMAC>``. It acts as the mesh's internal
    token and also proves the runtime (ctx.state's namespace); runtime names hold no dots. The
    gateway gives it to the pods it starts, which never see the internal token; a pod given the
    internal token itself (Kubernetes, with RUNTIME_ENV) makes its own, and could make another
    runtime's: pods that hold the mesh's token are trusted with every runtime's state, as they
    are with calling every function."""
    mac = hmac.new(internal_token.encode(), f"runtime:{runtime}".encode(), hashlib.sha256).hexdigest()
    return f"{runtime}.{mac}"
