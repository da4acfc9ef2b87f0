"""`toolmesh.toml`: read once at start-up into typed, validated objects.

    [gateway]
    host = "127.0.0.1"          # with no [[keys]] the gateway is open: keep it on loopback
    http_port = 8080
    grpc_port = 50051
    drain_grace = 10.0          # seconds calls in flight get to finish on SIGTERM
    drain_delay = 0.0           # seconds /readyz says 503 on SIGTERM before new calls are refused
    header_timeout = 10.0       # seconds a client has to send a request's head (slowloris)
    allowed_hosts = ["gw.example.com"]             # besides loopback names and IP literals
    allowed_origins = ["https://app.example.com"]  # besides loopback origins and its own
    public_url = "https://gw.example.com"          # as clients reach it (OAuth's resource)
    [[runtimes]]
    name = "weather"
    modules = ["examples.weather"]

    [[runtimes]]
    name = "remote"
    address = "10.0.0.7:50061"  # a pod someone else runs

    [[keys]]
    name = "ci"
    key_env = "TOOLMESH_CI_KEY" # or key_hash = "sha256:<hex>"; keys are only kept hashed
    scopes = ["weather.*", "get_*"]
    rate = 10                   # calls per second, refilled continuously
    burst = 20

    [chat]
    upstream_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"
    models = ["gpt-4.1-mini"]   # empty: any model name passes through
    aliases = { fast = "gpt-4.1-mini" }
    max_rounds = 4

    [router]                    # free-text routing, tool retrieval, /v1/execute and sessions
    enabled = true
    quantized = true            # the int8 model; false for fp32
    threshold = 0.3             # fused score below which no function fits

    [oauth]                     # bearer tokens (oauth_config.py)
    [state]                     # many gateways share rate limits, sessions and list_changed
    url = "redis://redis:6379/0"  # or TOOLMESH_STATE_URL; none: kept in this process
    [project]                   # one project, one data directory (jobs never cross projects)
    data_dir = "/srv/tools-data"  # default: .toolmesh/ beside this file (`toolmesh up --data-dir`)
    [jobs]                      # asynchronous calls (Prefer: respond-async), in a SQLite file
    workers = 4
    max_attempts = 5            # while the runtime is unavailable; then the job is dead
    callback_secret_env = "TOOLMESH_CALLBACK_SECRET"   # signs result callbacks
    [function_state]            # ctx.state: SQLite in the data directory, Redis with [state] url
    max_keys = 100000           # per runtime
    [[triggers]]                # schedules, webhooks, Redis/NATS/NOTIFY queues calling functions, as jobs

Module names and relative paths (`catalog`, the router's `model`, `tokenizer`, `cache_dir`,
`data_dir` and `embeddings_dir`, `[project] data_dir`, `[jobs] path`) resolve against the file's
own directory, so a config works from any directory. That directory is the project's: its data
(jobs, router sessions, learned examples) lives in its `.toolmesh/` unless configured elsewhere;
`MeshConfig.settled` computes those defaults, in that one place.

A mistake fails start-up with a `ConfigError` that names the key and says why.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolmesh import directories
from toolmesh.config import config_defaults as defaults
from toolmesh.config.jobs_config import JobsConfig, Triggers
from toolmesh.config.oauth_config import OAuthConfig
from toolmesh.config.router_config import LlmConfig as LlmConfig
from toolmesh.config.router_config import RouterConfig as RouterConfig
from toolmesh.config.runtime_config import FunctionStateConfig as FunctionStateConfig
from toolmesh.config.runtime_config import RuntimeConfig as RuntimeConfig
from toolmesh.directories import ProjectConfig

T = TypeVar("T")

#: Where a pod's service account credentials are mounted (the same in every Kubernetes cluster).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

#: The source checkout (this file is toolmesh/config/mesh_config.py in it), whose examples/ are
#: the default.
CHECKOUT = Path(__file__).resolve().parents[2]

#: What `toolmesh up` serves when given no config: every example module.
EXAMPLE_MODULES = (
    "examples.weather",
    "examples.delivery",
    "examples.arithmetic",
    "examples.text",
    "examples.knowledge",
    "examples.streaming",
)


_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
#: The jobs' and the functions' state files in the project's data directory, unless configured.
JOBS_FILE, STATE_FILE = "jobs.sqlite3", defaults.DEFAULT_FUNCTION_STATE_FILE


class ConfigError(Exception):
    """The configuration is invalid; the message names the key and the problem."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GatewayConfig(_Section):
    """The front door: where it listens and the limits it applies to every request."""

    #: Address the HTTP and gRPC servers bind; with no [[keys]] the gateway is open, so keep it on loopback.
    host: str = defaults.DEFAULT_HOST
    #: HTTP port (the REST API, MCP at /mcp, the console at /ui); 0 picks a free one.
    http_port: int = Field(defaults.DEFAULT_HTTP_PORT, ge=0, le=65535)
    #: gRPC port (the native `Mesh` service); 0 picks a free one.
    grpc_port: int = Field(defaults.DEFAULT_GRPC_PORT, ge=0, le=65535)
    #: Largest request body; bigger ones get 413.
    max_body_bytes: int = Field(defaults.DEFAULT_MAX_BODY_BYTES, ge=1024)
    #: Most tool calls in one /v1/tool_calls batch.
    max_batch: int = Field(defaults.DEFAULT_MAX_BATCH, ge=1)
    #: Deepest JSON nesting accepted in a request body.
    max_json_depth: int = Field(defaults.DEFAULT_MAX_JSON_DEPTH, ge=2, le=512)
    #: Seconds the gateway waits for one call (the function's own timeout may be shorter).
    call_timeout: float = Field(defaults.DEFAULT_CALL_TIMEOUT, gt=0)
    #: Seconds calls in flight get to finish on SIGTERM (new ones are refused at once); a call
    #: still running then gets a retryable `unavailable` error (it may have run). Then pods stop.
    drain_grace: float = Field(defaults.DEFAULT_GATEWAY_DRAIN_GRACE, ge=0)
    #: Seconds between SIGTERM and refusing new calls, while /readyz already answers 503: a
    #: load balancer that health-checks it moves callers off first. (Kubernetes' preStop does
    #: this before the signal: leave it 0 there.)
    drain_delay: float = Field(defaults.DEFAULT_GATEWAY_DRAIN_DELAY, ge=0, le=300)
    #: Seconds start-up waits for the runtimes that load from outside the gateway (`mcp_command`,
    #: `mcp_url`, `openapi`, `grpc_reflection`) before it serves; one still loading then joins when
    #: it has loaded (its calls are a retryable 503 until then), one that fails is tried again.
    start_grace: float = Field(defaults.DEFAULT_GATEWAY_START_GRACE, ge=0, le=300)
    #: Seconds a client has to send a request's line and headers, from when its connection opens or
    #: its previous response ends; a slower one is closed, however it trickles (slowloris).
    header_timeout: float = Field(defaults.DEFAULT_HEADER_TIMEOUT, gt=0)
    #: Seconds a request body may go without a byte arriving; then 408 and the connection closes.
    body_timeout: float = Field(defaults.DEFAULT_BODY_TIMEOUT, gt=0)
    #: Most HTTP connections open at once (None: the file limit, less a reserve for pods and files).
    #: At the cap a new connection evicts the oldest one that has not sent its request's head.
    max_connections: int | None = Field(None, ge=1)
    #: Host names (globs) served besides loopback names and IP literals (DNS rebinding); "*": any.
    allowed_hosts: tuple[str, ...] = ()
    #: Origins (globs) browsers may call from besides loopback and the gateway's own; get CORS.
    allowed_origins: tuple[str, ...] = ()
    #: Seconds a server-sent event stream may stay silent before a keep-alive comment goes out.
    stream_keepalive: float = Field(defaults.DEFAULT_STREAM_KEEPALIVE, gt=0)
    #: A port serving only `GET /metrics` with no key; on the main port it needs "@metrics".
    metrics_port: int | None = Field(None, ge=0, le=65535)
    #: One JSON line per HTTP request and Mesh gRPC call on the `toolmesh.access` logger.
    access_log: bool = defaults.DEFAULT_ACCESS_LOG
    #: One record per call on `toolmesh.audit` (who, what, outcome); None: on with `[oauth]` or
    #: `audit_file`.
    audit_log: bool | None = None
    #: A file the audit records are appended to as JSON lines, besides the log.
    audit_file: Path | None = None
    #: The gateway's URL as its clients reach it ("https://gw.example.com"): `[oauth]`'s audience.
    public_url: str | None = Field(None, pattern=r"^https?://[^/\s]+(/\S*)?$")
    #: Seconds a call's outcome is kept under its `Idempotency-Key` (repeats answer it, not a rerun).
    idempotency_ttl: float = Field(defaults.DEFAULT_IDEMPOTENCY_TTL, gt=0)
    #: Seconds a replica running a keyed call may go unheard before the call's outcome is unknown.
    idempotency_lease: float = Field(defaults.DEFAULT_IDEMPOTENCY_LEASE, gt=0)


class KeyConfig(_Section):
    """An API key: who holds it, what it may call, how fast."""

    #: The key's name, as the audit trail, metrics and job ownership show it.
    name: str
    #: The key itself is read from this environment variable and kept only hashed.
    key_env: str | None = None
    #: Or its SHA-256 hash, as "sha256:<hex>" (see `toolmesh hash-key`).
    key_hash: str | None = None
    #: Globs over qualified function names ("weather.*", "get_forecast"); "*" for everything.
    scopes: tuple[str, ...] = ("*",)
    #: Sustained calls per second (None: unlimited) and the burst allowed above it.
    rate: float | None = Field(None, gt=0)
    #: Calls allowed at once above `rate` (a token bucket's size); None: `rate`, at least 1.
    burst: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> KeyConfig:
        if bool(self.key_env) == bool(self.key_hash):
            raise ValueError("give exactly one of `key_env` and `key_hash`")
        if self.key_hash is not None and not _HASH.match(self.key_hash):
            raise ValueError("key_hash must look like 'sha256:<64 hex digits>'")
        return self


class McpConfig(_Section):
    """The MCP endpoint (`/mcp`, Streamable HTTP)."""

    #: Serve `/mcp` and `/mcp/{namespace}` at all.
    enabled: bool = True
    #: Added to `[gateway] allowed_origins` (where new configs should put them).
    allowed_origins: tuple[str, ...] = ()
    #: Tools per tools/list page.
    page_size: int = Field(defaults.DEFAULT_MCP_PAGE_SIZE, ge=1, le=1000)
    #: Env var with the secret (32+ bytes) sealing `requestState` (ctx.elicit...); None: per process.
    state_secret_env: str | None = None
    #: Seconds a `requestState` stays valid.
    state_ttl: float = Field(defaults.DEFAULT_MCP_STATE_TTL, gt=0)
    #: Most rounds of asks (elicitation, sampling, roots) one call may take.
    max_input_rounds: int = Field(defaults.DEFAULT_MCP_MAX_INPUT_ROUNDS, ge=1, le=100)


class ChatConfig(_Section):
    """The OpenAI-compatible chat proxy (`POST /v1/chat/completions`); off without `upstream_url`."""

    #: Base URL of an OpenAI-compatible API, e.g. "https://api.openai.com/v1".
    upstream_url: str | None = None
    #: Environment variable holding the upstream's API key (read once at start); None sends no key.
    api_key_env: str | None = None
    #: Model names clients may ask for; empty lets any name through to the upstream.
    models: tuple[str, ...] = ()
    #: Names clients may use for upstream models: { fast = "gpt-4.1-mini" }.
    aliases: dict[str, str] = Field(default_factory=dict)
    #: Rounds of mesh tool calls before the model is asked to answer without tools.
    max_rounds: int = Field(defaults.DEFAULT_CHAT_MAX_ROUNDS, ge=1, le=32)
    #: Seconds one upstream request may take; streamed, the longest wait for its next chunk.
    timeout: float = Field(defaults.DEFAULT_CHAT_TIMEOUT, gt=0)
    #: With more visible tools than this, only the tool selector's `top_k` are offered to the model.
    narrow_above: int = Field(defaults.DEFAULT_CHAT_NARROW_ABOVE, ge=1)
    #: How many tools are offered when `narrow_above` is passed.
    top_k: int = Field(defaults.DEFAULT_CHAT_TOP_K, ge=1)

    @model_validator(mode="after")
    def _check(self) -> ChatConfig:
        if self.upstream_url is not None and not self.upstream_url.startswith(("http://", "https://")):
            raise ValueError(f"upstream_url {self.upstream_url!r} must start with http:// or https://")
        unknown = sorted(a for a, m in self.aliases.items() if self.models and m not in self.models)
        if unknown:
            raise ValueError(f"aliases {', '.join(unknown)} name models that are not in `models`")
        return self

    @property
    def enabled(self) -> bool:
        return self.upstream_url is not None


class KubeScalerConfig(_Section):
    """Optional, on a Kubernetes cluster: the gateway scales a sleeping runtime's Deployment
    from 0 to 1 itself (scale subresource), instead of waiting for KEDA's next look at the
    metrics. Needs the RBAC that `toolmesh deploy render` adds when this is enabled."""

    #: Wake sleeping runtimes through the Kubernetes API.
    enabled: bool = False
    #: The runtimes' namespace; empty means the gateway pod's own (the `namespace` file
    #: beside `token_path`, as the kubelet mounts it).
    namespace: str = ""
    #: The API server; empty means in-cluster (https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT).
    api_url: str = ""
    #: The service account's token (re-read on every request: the kubelet rotates it) and CA.
    token_path: str = f"{SERVICE_ACCOUNT_DIR}/token"
    #: The CA bundle that signs the API server's certificate.
    ca_path: str = f"{SERVICE_ACCOUNT_DIR}/ca.crt"
    #: Seconds between two scale requests for one runtime.
    min_interval: float = Field(defaults.DEFAULT_WAKE_INTERVAL, ge=0)
    #: Seconds one request to the API server may take.
    timeout: float = Field(defaults.DEFAULT_KUBE_API_TIMEOUT, gt=0)


#: The URL schemes redis-py opens: TCP, TLS and a Unix socket.
STATE_SCHEMES = ("redis://", "rediss://", "unix://")


def check_state_url(url: str, where: str) -> str:
    """`url` if it names a Redis server; a ConfigError naming `where` otherwise."""
    if not url.startswith(STATE_SCHEMES) or len(url) <= len(url.split("://", 1)[0]) + 3:
        shown = url.split("@", 1)[-1]  # never echo a password
        raise ConfigError(
            f"{where}: {shown!r} is not a Redis URL: it must start with {', '.join(STATE_SCHEMES)}"
        )
    return url


class StateConfig(_Section):
    """State shared by every gateway replica (rate limits, router sessions, MCP list_changed),
    in Redis. Without a URL (and no TOOLMESH_STATE_URL) it stays in the gateway's own process."""

    #: "redis://[:password@]host:6379/0", "rediss://..." (TLS) or "unix:///path/redis.sock".
    url: str | None = None
    #: Put before every key and channel, so several meshes can share one Redis.
    key_prefix: str = defaults.DEFAULT_STATE_KEY_PREFIX
    #: Seconds one Redis command may take; past it the request gets 503 `state_unavailable`.
    timeout: float = Field(defaults.DEFAULT_STATE_TIMEOUT, gt=0)

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        try:
            return None if url is None else check_state_url(url, "url")
        except ConfigError as exc:
            raise ValueError(str(exc).removeprefix("url: ")) from None


class MeshConfig(_Section):
    #: Where the runtimes' modules are found and relative paths resolve: the config file's
    #: directory, set by `load_config` (not a key of the file). None: the current directory.
    directory: Path | None = None
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    runtimes: tuple[RuntimeConfig, ...] = ()
    keys: tuple[KeyConfig, ...] = ()
    mcp: McpConfig = Field(default_factory=McpConfig)
    chat: ChatConfig = Field(default_factory=ChatConfig)
    kube_scaler: KubeScalerConfig = Field(default_factory=KubeScalerConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    state: StateConfig = Field(default_factory=StateConfig)
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    function_state: FunctionStateConfig = Field(default_factory=FunctionStateConfig)
    project: ProjectConfig = Field(default_factory=ProjectConfig)
    oauth: OAuthConfig | None = None
    #: Schedules, webhooks and Redis streams that call functions (jobs_config.py).
    triggers: Triggers = ()

    @model_validator(mode="after")
    def _unique(self) -> MeshConfig:
        if self.oauth is not None and not (self.oauth.audience or self.gateway.public_url):
            raise ValueError("[oauth] needs an `audience`, or a [gateway] public_url to default it to")
        for what, names in (
            ("runtimes", [r.name for r in self.runtimes]),
            ("keys", [k.name for k in self.keys]),
        ):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"{what} names repeat: {', '.join(repeated)}")
        if self.triggers and not self.jobs.enabled:
            raise ValueError("triggers: each run is a job; [jobs] enabled = false leaves them nowhere")
        return self

    def resolve(self, path: str | Path) -> Path:
        """`path` from the config, relative to the config's directory."""
        given = Path(path).expanduser()
        return given if self.directory is None else self.directory / given

    def project_directory(self) -> Path:
        """The project's directory: the config file's, or the current one (`--module`)."""
        return self.directory if self.directory is not None else Path.cwd()

    def settled(self) -> MeshConfig:
        """This config with every data location filled in: the one place their defaults are
        computed. The project id comes from the project's directory unless `[project] id` says;
        the data directory is `[project] data_dir`, else the project's own (`.toolmesh`, or a
        per-project one in the user's data directory when that is read-only); the jobs file
        and the router's data are in it unless `[jobs] path` or `[router] data_dir` say
        otherwise, and so is the functions' state (`[function_state] path`). Function embeddings
        stay user-wide: a cache, not the project's data."""
        project = self.project
        ident = project.id or directories.project_id(self.project_directory())
        data = project.data_dir or directories.project_data_dir(self.project_directory(), ident)
        router = self.router
        embeddings = router.embeddings_dir or router.data_dir or directories.default_data_dir()
        jobs, state = self.jobs, self.function_state.path
        return self.model_copy(
            update={
                "project": project.model_copy(update={"id": ident, "data_dir": data}),
                "router": router.model_copy(
                    update={"data_dir": router.data_dir or data, "embeddings_dir": embeddings}
                ),
                "jobs": jobs.model_copy(update={"path": jobs.path or data / JOBS_FILE}),
                "function_state": self.function_state.model_copy(update={"path": state or data / STATE_FILE}),
            }
        )


def settled_value(value: T | None, key: str) -> T:
    """A value `MeshConfig.settled` filled in (a location, the project id); a ConfigError naming
    `key` if the config was not settled."""
    if value is None:
        raise ConfigError(f"{key} is not set: settle the config first (MeshConfig.settled)")
    return value


def hash_key(key: str) -> str:
    """The stored form of an API key."""
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def parse_config(data: Mapping[str, Any], source: str = "config") -> MeshConfig:
    """Validate a config mapping (a parsed TOML file)."""
    if "directory" in data:
        # The field records where the file is; it is never read from the file.
        raise ConfigError(f"{source}: directory: Extra inputs are not permitted")
    try:
        return MeshConfig.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        )
        raise ConfigError(f"{source}: {problems}") from None


def default_config() -> MeshConfig:
    """Every example module in one runtime, found in the source checkout when there is one
    (an installed wheel has no examples/: then they must be importable from the current directory)."""
    checkout = CHECKOUT if (CHECKOUT / "examples" / "weather.py").is_file() else None
    return MeshConfig(directory=checkout, runtimes=(RuntimeConfig(name="examples", modules=EXAMPLE_MODULES),))


def _resolve_paths(config: MeshConfig) -> MeshConfig:
    router = config.router
    fields = ("cache_dir", "data_dir", "embeddings_dir", "model", "tokenizer")
    given = {key: getattr(router, key) for key in fields if getattr(router, key) is not None}
    resolved = {key: config.resolve(value) for key, value in given.items()}
    jobs, project, gateway = config.jobs, config.project, config.gateway
    if gateway.audit_file is not None:
        gateway = gateway.model_copy(update={"audit_file": config.resolve(gateway.audit_file)})
    if jobs.path is not None:
        jobs = jobs.model_copy(update={"path": config.resolve(jobs.path)})
    function_state = config.function_state
    if function_state.path is not None:
        function_state = function_state.model_copy(update={"path": config.resolve(function_state.path)})
    if project.data_dir is not None:
        project = project.model_copy(update={"data_dir": config.resolve(project.data_dir)})
    update = {
        "router": router.model_copy(update=resolved),
        "jobs": jobs,
        "function_state": function_state,
        "gateway": gateway,
    }
    return config.model_copy(update={**update, "project": project})


def load_config(path: str | Path | None = None) -> MeshConfig:
    """Read `path`, or return the default: every example module in one runtime.

    The config records the file's directory: its runtimes' modules and its relative paths
    resolve there, whatever the current directory."""
    if path is None:
        return default_config()
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{file}: is a directory, not a toolmesh.toml") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    config = parse_config(data, str(file)).model_copy(update={"directory": file.resolve().parent})
    return _resolve_paths(config)
