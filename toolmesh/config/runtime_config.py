"""`toolmesh.toml`'s `[[runtimes]]` entries and `[function_state]` (what the gateway keeps for their
functions); `toolmesh.config` reads them with the rest."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolmesh.config import config_defaults as defaults
from toolmesh.config.tls_config import PLAINTEXT_SCHEME, GrpcTls, grpc_target
from toolmesh.directories import default_data_dir
from toolmesh.protocol.defaults import (
    DEFAULT_DRAIN_GRACE,
    DEFAULT_LOG_LEVEL,
    DEFAULT_LOOP_BLOCKED_AFTER,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TIMEOUT,
    DEFAULT_WORKERS,
    MAX_RESULT_BYTES_CEILING,
    MIN_MAX_MEMORY_MB,
    LogLevel,
    TemplateMode,
)
from toolmesh.runtimes.functions.spec import FreeTextPolicy, FunctionSpec
from toolmesh.runtimes.mcp import BRIDGE_MODULE

RUNTIME_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
#: A Kubernetes CPU quantity: cores ("0.5", "2") or millicores ("250m").
_CPU = re.compile(r"^(\d+(\.\d{1,3})?|\d+m)$")


class HeaderFromEnv(BaseModel):
    """A header value read from the gateway's environment at start-up: `prefix` + `$env`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: str
    prefix: str = ""


def cpu_cores(quantity: str) -> float:
    return int(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


class RuntimeConfig(BaseModel):
    """One runtime: modules the gateway starts pods for, the address of pods someone else runs,
    or an OpenAPI service whose operations are its functions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The runtime's name: its functions' namespace and its pods' name.
    name: str
    #: The modules the runtime serves. Without `address` the gateway runs pods for them; with
    #: one, it only reads their functions (in a child process, never serving them itself),
    #: so it knows the catalog while the pods at `address` are scaled to zero.
    modules: tuple[str, ...] = ()
    #: Pods someone else runs: a pod's "host:port", or any gRPC target, e.g. the headless
    #: Service of a runtime on Kubernetes: "dns:///<service>.<namespace>.svc.cluster.local:<port>".
    address: str | None = None
    #: With `address`: the environment variable holding the token its pods check
    #: (their TOOLMESH_POD_TOKEN), sent on every call to them.
    token_env: str | None = None
    #: An OpenAPI 3.0/3.1 document (a path, relative to the config file, or an http(s) URL, JSON
    #: or YAML) whose operations become the runtime's functions, called over HTTP by the gateway
    #: itself (no pods): see gateway/sources/openapi/.
    openapi: str | None = None
    #: With `openapi`: where the service is; unset, the document's first `servers` URL.
    base_url: str | None = None
    #: With `openapi`: other origins ("https://schemas.example.org") whose files the document's
    #: `$ref`s may fetch. Unset, a URL document's references reach its own origin only, a file
    #: document's local files only.
    ref_origins: tuple[str, ...] = ()
    #: A remote MCP server's endpoint (an http(s) URL: Streamable HTTP, or an HTTP+SSE event stream,
    #: see `mcp_transport`) whose tools are the runtime's functions, called by the gateway itself
    #: (no pods): see gateway/sources/remote_mcp/.
    mcp_url: str | None = None
    #: With `mcp_url`: how the server is spoken to. "streamable-http"; "sse", the deprecated
    #: HTTP+SSE transport (2024-11-05: `mcp_url` is the event stream, e.g. "https://host/sse");
    #: "auto" (the default) tries Streamable HTTP and, when the server refuses its POST (400, 404,
    #: 405), opens `mcp_url` as an HTTP+SSE stream, as the MCP specification tells clients to.
    mcp_transport: Literal["auto", "streamable-http", "sse"] = "auto"
    #: With `mcp_command` or `mcp_url`: offer the server the `roots` capability, its `roots/list`
    #: during a call answered by that call's caller. Off by default: stdio and a session's own
    #: stream do not say whose a request is, and a server that asks on its own (just after
    #: `initialize`) would have the call then in flight asked.
    roots: bool = False
    #: A gRPC server's "host:port" whose services, read by server reflection, are the runtime's
    #: functions (one per unary method), called by the gateway itself: see gateway/sources/grpc_reflection/.
    grpc_reflection: str | None = None
    #: With `grpc_reflection`: TLS to the server (also asked by a "grpcs://host:port" target):
    #: `true` trusts the system's roots; a table names files or variables holding PEM text, see
    #: toolmesh/config/tls_config.py: `{ ca_file = "ca.pem", cert_file = "me.pem", key_file =
    #: "me.key", server_name = "billing" }`, `{ ca = { env = "BILLING_CA" } }`.
    tls: bool | GrpcTls = False
    #: With `openapi`, `mcp_url` or `grpc_reflection`: headers (gRPC metadata) sent on every call,
    #: e.g. `{ Authorization = { env = "TOKEN", prefix = "Bearer " } }`. A caller's own
    #: credentials are never passed on.
    headers: dict[str, str | HeaderFromEnv] = Field(default_factory=dict)
    #: With `openapi`: query parameters sent on every call, for a service whose API key goes in
    #: the query: `{ api_key = { env = "WEATHER_KEY" } }`. The document's parameter of that name
    #: is no argument.
    query: dict[str, str | HeaderFromEnv] = Field(default_factory=dict)
    #: With `openapi`: only the operations whose operationId or a tag matches one of these globs
    #: (empty: all), less those matching `exclude`. With `mcp_url`: globs over tool names; with
    #: `grpc_reflection`: over methods' full names ("package.Service/Method").
    include: tuple[str, ...] = ()
    #: Globs removed from what `include` selects.
    exclude: tuple[str, ...] = ()
    #: A stdio MCP server (its command line) whose tools are the runtime's functions: each of the
    #: runtime's pods runs one server process (see runtimes/mcp/), scaled like any pod.
    mcp_command: tuple[str, ...] = ()
    #: On Kubernetes (`toolmesh deploy render`), the image of the runtime's pods; unset, the one
    #: given by `--image`. With `mcp_command` it must hold the server's command as well as
    #: toolmesh (build it FROM the toolmesh image).
    image: str | None = None
    #: Extra environment variables for the runtime's pods.
    env: dict[str, str] = Field(default_factory=dict)
    #: With `mcp_command`: variables of the gateway's environment the server gets besides
    #: `env` and a few every program needs (HOME, PATH, USER, LANG, TZ, TMPDIR...): names or
    #: globs, e.g. `["HTTPS_PROXY", "NODE_EXTRA_CA_CERTS"]`. Nothing else of the gateway's
    #: environment (its keys and tokens) reaches a third-party server.
    inherit_env: tuple[str, ...] = ()
    #: Default per-call timeout inside the pod, in seconds.
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0)
    #: Seconds a call's async code may block a pod's event loop before it is reported (a log
    #: line and metrics naming the function and request id). The pod is replaced only if the
    #: loop is still blocked when that call's time limit passes.
    loop_blocked_after: float = Field(DEFAULT_LOOP_BLOCKED_AFTER, gt=0)
    #: Calls running at once in one pod before new ones are turned away.
    max_inflight: int = Field(DEFAULT_MAX_INFLIGHT, ge=1)
    #: Threads for sync functions in each pod.
    workers: int = Field(DEFAULT_WORKERS, ge=1)
    #: Each pod's memory limit in MiB, as an address-space limit (RLIMIT_AS) set in the pod
    #: after it starts, never in the template; on Kubernetes also the container's memory limit.
    #: A call that passes it gets a `resource_exhausted` error naming the limit, and at worst
    #: its own pod dies. None (the default): no limit. Address space counts what a pod
    #: reserves, not what it uses: an idle pod reserves about 200 MiB, each busy worker thread
    #: 8 MiB more, so it is at least 512 and a pod refuses to start below its own need.
    max_memory_mb: int | None = Field(DEFAULT_MAX_MEMORY_MB, ge=MIN_MAX_MEMORY_MB)
    #: On Kubernetes, each pod's requests (what the scheduler reserves: `cpu` in cores or
    #: millicores, "250m"; `memory_mb` in MiB) and CPU limit (`max_cpu`; "none" for no limit,
    #: so a pod may burst onto idle cores). Unset: the manifests' defaults (100m and 128 MiB
    #: requested, 1 core at most). Pods on one machine take what they need; the memory limit
    #: there is `max_memory_mb`.
    cpu: str | None = None
    #: See `cpu`: each pod's CPU limit on Kubernetes.
    max_cpu: str | None = None
    #: See `cpu`: each pod's memory request on Kubernetes, in MiB.
    memory_mb: int | None = Field(None, ge=1)

    @field_validator("cpu", "max_cpu", mode="before")
    @classmethod
    def _quantity(cls, value: object) -> object:
        # TOML numbers (cpu = 0.5) are the same quantity as strings.
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value

    #: Largest result a call may return, in bytes (content plus structured JSON); a larger one
    #: is a `resource_exhausted` error for that call only. At most 63 MiB (the wire takes 64).
    max_result_bytes: int = Field(DEFAULT_MAX_RESULT_BYTES, ge=1024, le=MAX_RESULT_BYTES_CEILING)
    #: Seconds a pod's in-flight calls get to finish when it stops.
    drain_grace: float = Field(DEFAULT_DRAIN_GRACE, ge=0)
    #: Pods kept running with no calls at all (0: scale to zero when idle).
    min_replicas: int = Field(defaults.DEFAULT_MIN_REPLICAS, ge=0)
    #: Most pods at once, however many calls arrive.
    max_replicas: int = Field(defaults.DEFAULT_MAX_REPLICAS, ge=1)
    #: Calls in flight per pod above which another pod starts.
    target_concurrency: int = Field(defaults.DEFAULT_TARGET_CONCURRENCY, ge=1)
    #: Exactly one pod, started with the gateway and never scaled to zero (min_replicas and
    #: max_replicas are 1), so that module globals are the runtime's one in-process state. Calls
    #: past its `max_inflight` wait for it (up to `max_queue`). The trade-off: no scaling out,
    #: and that state is still lost when the pod crashes, is reloaded or the gateway restarts;
    #: `ctx.state` keeps state that survives those, with any number of pods.
    singleton: bool = False
    #: Seconds a pod may sit without calls before it is stopped (down to min_replicas).
    idle_timeout: float = Field(defaults.DEFAULT_IDLE_TIMEOUT, gt=0)
    #: Seconds a new pod may take to serve; also the longest a call is held waiting for one.
    startup_timeout: float = Field(defaults.DEFAULT_STARTUP_TIMEOUT, gt=0)
    #: Calls held waiting for a pod before new ones are turned away (503).
    max_queue: int = Field(defaults.DEFAULT_MAX_QUEUE, ge=0)
    #: How pods start: "fork" from a template process that has the modules loaded
    #: (fast), or "exec" a fresh interpreter each time (slow; for modules that
    #: cannot survive a fork, e.g. ones that start threads at import).
    spawn: TemplateMode = "fork"
    #: How the gateway sends unary calls to the pods it runs: over a Unix socket (fast; the
    #: same messages, see toolmesh/protocol/frames.py) or over gRPC like everyone else.
    transport: Literal["socket", "grpc"] = "socket"
    #: The pods' log level; "warning" silences their per-call log lines.
    log_level: LogLevel = DEFAULT_LOG_LEVEL
    #: With `address` and no `modules`: a file listing the runtime's functions (`toolmesh
    #: functions --module ... --format json`); without either, the gateway asks the pods at start.
    catalog: str | None = None
    #: Whether free text (`/v1/execute`) may run the runtime's functions, over what their
    #: decorators say: a policy for all of them ("confirm"), or a table from function names
    #: (globs over the unqualified or qualified name) to policies, the most specific first:
    #: `{ "*" = "confirm", "list_*" = "run", remove_item = "never" }`. See FREE_TEXT_POLICIES.
    free_text: dict[str, FreeTextPolicy] = Field(default_factory=dict)

    @property
    def runs_pods(self) -> bool:
        """Whether its pods are run for it (by the gateway, or on Kubernetes by the cluster):
        a runtime of `modules` with no `address`. Not one at an address, nor a service the gateway
        calls itself (`in_gateway`)."""
        return self.address is None and not self.in_gateway

    @property
    def in_gateway(self) -> bool:
        """Whether the gateway calls its service itself, with no pods: an OpenAPI service, a
        remote MCP server, a gRPC server read by reflection (gateway/sources/)."""
        return self.openapi is not None or self.mcp_url is not None or self.grpc_reflection is not None

    @property
    def pod_modules(self) -> tuple[str, ...]:
        """What its pods import: its `modules`, or with `mcp_command` the bridge to the server."""
        return (BRIDGE_MODULE,) if self.mcp_command else self.modules

    @field_validator("free_text", mode="before")
    @classmethod
    def _every_function(cls, value: object) -> object:
        return {"*": value} if isinstance(value, str) else value

    def free_text_for(self, name: str, qualified_name: str) -> FreeTextPolicy | None:
        """The policy `free_text` sets for a function (None: its own): an exact name wins over
        a glob, and a longer glob over a shorter one."""
        for pattern in sorted(self.free_text, key=lambda p: (any(c in p for c in "*?["), -len(p))):
            if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(qualified_name, pattern):
                return self.free_text[pattern]
        return None

    def with_free_text(self, spec: FunctionSpec) -> FunctionSpec:
        """`spec` with the free-text policy this runtime sets for it, if any."""
        policy = self.free_text_for(spec.name, spec.qualified_name) if self.free_text else None
        if policy is None or policy == spec.annotations.free_text:
            return spec
        return dataclasses.replace(spec, annotations=dataclasses.replace(spec.annotations, free_text=policy))

    @model_validator(mode="before")
    @classmethod
    def _one_pod(cls, data: object) -> object:
        if not isinstance(data, dict) or data.get("singleton") is not True:
            return data
        for field in ("min_replicas", "max_replicas"):
            if data.get(field, 1) != 1:
                raise ValueError(f"a singleton runtime runs exactly one pod: {field} must be 1 or unset")
        if data.get("address") is not None:
            raise ValueError("`singleton` goes with `modules`: the gateway scales no pods at an `address`")
        return {**data, "min_replicas": 1, "max_replicas": 1}

    @model_validator(mode="after")
    def _check(self) -> RuntimeConfig:
        if not RUNTIME_NAME.match(self.name):
            raise ValueError(f"name {self.name!r} must be lowercase letters, digits and '-' (a DNS label)")
        kinds = [
            field
            for field, value in (
                ("modules", self.modules),
                ("address", self.address),
                ("openapi", self.openapi),
                ("mcp_command", self.mcp_command),
                ("mcp_url", self.mcp_url),
                ("grpc_reflection", self.grpc_reflection),
            )
            if value
        ]
        if not kinds:
            raise ValueError(
                "give `modules` (pods the gateway starts), `address` (pods running elsewhere), "
                "`openapi` (an HTTP service), `mcp_command` (a stdio MCP server), `mcp_url` (a remote "
                "MCP server) or `grpc_reflection` (a gRPC server)"
            )
        service = next((k for k in kinds if k in ("openapi", "mcp_url", "grpc_reflection")), None)
        if service is not None and {"modules", "address"} & set(kinds):
            raise ValueError(f"`{service}` runs no pods: give it without `modules` or `address`")
        # `modules` with `address`: the pods elsewhere serve those modules (their catalog).
        if len(kinds) > 1 and set(kinds) != {"modules", "address"}:
            raise ValueError(f"give one source of functions, not {' and '.join(f'`{k}`' for k in kinds)}")
        if self.tls is not False and self.grpc_reflection is None:
            raise ValueError("`tls` goes with `grpc_reflection`")
        if self.mcp_transport != "auto" and self.mcp_url is None:
            raise ValueError("`mcp_transport` goes with `mcp_url`")
        if self.inherit_env and not self.mcp_command:
            raise ValueError("`inherit_env` goes with `mcp_command` (other pods get the whole environment)")
        if self.roots and not (self.mcp_command or self.mcp_url):
            raise ValueError("`roots` goes with `mcp_command` or `mcp_url`")
        if self.in_gateway:
            self._check_service()
        elif (
            self.base_url is not None
            or self.ref_origins
            or self.headers
            or self.query
            or self.include
            or self.exclude
        ):
            raise ValueError(
                "`base_url`, `headers`, `include` and `exclude` go with `openapi`, `mcp_url` or "
                "`grpc_reflection`"
            )
        if self.image is not None and not self.runs_pods:
            raise ValueError(
                "`image` goes with `modules` or `mcp_command`: it is the image of the runtime's pods"
            )
        if self.catalog is not None and (self.address is None or self.modules):
            raise ValueError(
                "`catalog` goes with `address` alone; with `modules` the functions are read from them"
            )
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas ({self.min_replicas}) exceeds max_replicas ({self.max_replicas})")
        self._check_resources()
        return self

    def _check_service(self) -> None:
        if self.base_url is not None and self.openapi is None:
            raise ValueError("`base_url` goes with `openapi`")
        if self.ref_origins and self.openapi is None:
            raise ValueError("`ref_origins` goes with `openapi`")
        if self.query and self.openapi is None:
            raise ValueError("`query` goes with `openapi`")
        for ref_origin in self.ref_origins:
            if not ref_origin.startswith(("http://", "https://")):
                raise ValueError(f"ref_origins: {ref_origin!r} must be an http:// or https:// origin")
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url {self.base_url!r} must be an http:// or https:// URL")
        if self.mcp_url is not None and not self.mcp_url.startswith(("http://", "https://")):
            raise ValueError(f"mcp_url {self.mcp_url!r} must be an http:// or https:// URL")
        target = self.grpc_reflection
        if target is None:
            return
        address = grpc_target(target)
        if not address.strip() or "://" in address:
            raise ValueError(
                f'grpc_reflection {target!r} must be a gRPC target, "host:port" or "grpcs://host:port"'
            )
        if target.startswith(PLAINTEXT_SCHEME) and self.tls is not False:
            raise ValueError(f"grpc_reflection {target!r} says plaintext (grpc://) but `tls` is set")

    def _check_resources(self) -> None:
        for field, value in (("cpu", self.cpu), ("max_cpu", self.max_cpu)):
            if value is not None and not (_CPU.match(value) or (field == "max_cpu" and value == "none")):
                raise ValueError(f'{field} {value!r} must be cores ("0.5", "2") or millicores ("500m")')
        limit = None if self.max_cpu in (None, "none") else self.max_cpu
        if self.cpu is not None and limit is not None and cpu_cores(self.cpu) > cpu_cores(limit):
            raise ValueError(f"cpu ({self.cpu}) exceeds max_cpu ({limit})")
        memory, most = self.memory_mb, self.max_memory_mb
        if memory is not None and most is not None and memory > most:
            raise ValueError(f"memory_mb ({memory}) exceeds max_memory_mb ({most})")


class FunctionStateConfig(BaseModel):
    """Functions' durable state (`ctx.state`): kept by the gateway in a SQLite file, or in Redis
    when `[state]` has a URL, one namespace per runtime, within these limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The SQLite file; None: `function_state.sqlite3` in the project's data directory (`settled`).
    #: Gateways sharing the file share the state (one machine). Unused with Redis.
    path: Path | None = None
    #: The largest value, in bytes of JSON; a larger one is refused (invalid_request).
    max_value_bytes: int = Field(defaults.DEFAULT_STATE_MAX_VALUE_BYTES, ge=16, le=64 * 1024 * 1024)
    #: The longest key, in characters.
    max_key_chars: int = Field(defaults.DEFAULT_STATE_MAX_KEY_CHARS, ge=1, le=65536)
    #: Keys one runtime may hold (expired ones do not count); a new key past it is resource_exhausted.
    max_keys: int = Field(defaults.DEFAULT_STATE_MAX_KEYS, ge=1)

    @field_validator("path")
    @classmethod
    def _expand(cls, path: Path | None) -> Path | None:
        return None if path is None else path.expanduser()

    def file(self) -> Path:
        """The SQLite file's path: the one place that says where function state lives on disk."""
        default = default_data_dir() / defaults.DEFAULT_FUNCTION_STATE_FILE
        return self.path if self.path is not None else default


__all__ = ["RUNTIME_NAME", "FunctionStateConfig", "HeaderFromEnv", "RuntimeConfig", "cpu_cores"]
