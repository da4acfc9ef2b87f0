"""The defaults of `toolmesh.toml`'s gateway-side sections, one named constant each (the pods'
own are in `toolmesh.protocol.defaults`)."""

from __future__ import annotations

import os

DEFAULT_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8080
DEFAULT_GRPC_PORT = 50051
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_BATCH = 64
DEFAULT_MAX_JSON_DEPTH = 64
DEFAULT_CALL_TIMEOUT = 30.0
DEFAULT_GATEWAY_DRAIN_GRACE = 10.0
DEFAULT_GATEWAY_DRAIN_DELAY = 0.0
#: Seconds start-up waits for the sources that load over a network or a server process before serving.
DEFAULT_GATEWAY_START_GRACE = 5.0
DEFAULT_ACCESS_LOG = True
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0
#: Below the common proxy idle timeouts (nginx and most load balancers: 60 s).
DEFAULT_STREAM_KEEPALIVE = 15.0
#: Seconds a keyed call's outcome is kept for its repeats (Stripe keeps them 24 hours).
DEFAULT_IDEMPOTENCY_TTL = 24 * 3600.0
#: Seconds a replica running a keyed call may miss renewing its claim (it renews every third of
#: it) before another replica says the outcome is unknown: its pods and Redis answer in well
#: under that, so a replica this silent is gone.
DEFAULT_IDEMPOTENCY_LEASE = 10.0
#: The SQLite file of keyed calls' outcomes in the project's data directory (unused with Redis).
IDEMPOTENCY_FILE = "idempotency.sqlite3"
DEFAULT_MIN_REPLICAS = 0
DEFAULT_MAX_REPLICAS = 4
DEFAULT_TARGET_CONCURRENCY = 32
DEFAULT_IDLE_TIMEOUT = 120.0
DEFAULT_STARTUP_TIMEOUT = 10.0
DEFAULT_MAX_QUEUE = 256
DEFAULT_MCP_PAGE_SIZE = 100
#: Seconds a sealed MCP `requestState` (a call that asks its caller) stays valid.
DEFAULT_MCP_STATE_TTL = 600.0
#: Most rounds of asks one MCP tool call may take before it is refused.
DEFAULT_MCP_MAX_INPUT_ROUNDS = 10
DEFAULT_CHAT_MAX_ROUNDS = 4
DEFAULT_CHAT_TIMEOUT = 120.0
DEFAULT_CHAT_NARROW_ABOVE = 128
DEFAULT_CHAT_TOP_K = 16
#: Seconds between two scale requests for the same runtime: a burst of calls makes one.
DEFAULT_WAKE_INTERVAL = 5.0
DEFAULT_KUBE_API_TIMEOUT = 5.0
DEFAULT_ROUTER_K = 5
#: Fused score (cosine + lexical bonus) the best function needs to count as a match;
#: calibrated on short prompts for the examples and on the BFCL set (see bench/RESULTS.md).
DEFAULT_ROUTER_THRESHOLD = 0.3
DEFAULT_ROUTER_MAX_TOKENS = 256
#: onnxruntime threads per prompt. Two cut a prompt's embedding by about a fifth; more
#: share its ~20 rows too thinly to pay for the hand-offs. They spin only while a prompt
#: runs (bench/RESULTS.md).
DEFAULT_ROUTER_THREADS = min(2, os.cpu_count() or 1)
#: Longest prompt accepted. A prompt asks for one call; the embedder reads its first 256 tokens
#: (~1,000 characters), so the rest is argument text ("summarise: ..."): 8,000 leave two pages for
#: it, and the worst prompt that long costs extraction ~0.1 s of CPU. The config allows up to 100k.
DEFAULT_MAX_PROMPT_CHARS = 8000
MAX_PROMPT_CHARS_LIMIT = 100_000
#: Router threads: each pure-Python one is another the event loop waits behind for the GIL.
DEFAULT_ROUTER_WORKERS = 2
DEFAULT_SESSION_TTL = 24 * 3600.0
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_SESSION_TURNS = 50
#: Seconds a free-text call waits for its confirmation (gateway/state/confirmations.py).
DEFAULT_CONFIRMATION_TTL = 120.0
DEFAULT_LLM_TIMEOUT = 20.0
#: Keys and channels of shared state start with this (several meshes can share one Redis).
DEFAULT_STATE_KEY_PREFIX = "toolmesh:"
#: Seconds one Redis command may take: loopback or in-cluster answers in well under a millisecond,
#: so a second means Redis is gone or stuck, and the caller should hear so soon.
DEFAULT_STATE_TIMEOUT = 1.0
#: Functions' durable state (`ctx.state`, [function_state]): its SQLite file in the data directory
#: (unused with Redis), the largest value (JSON bytes), the longest key and the most keys a runtime holds.
DEFAULT_FUNCTION_STATE_FILE = "function_state.sqlite3"
DEFAULT_STATE_MAX_VALUE_BYTES = 1024 * 1024
DEFAULT_STATE_MAX_KEY_CHARS = 512
DEFAULT_STATE_MAX_KEYS = 100_000
#: Asynchronous jobs ([jobs]): workers in the gateway running queued jobs.
DEFAULT_JOB_WORKERS = 4
#: Attempts a job gets when its runtime is unavailable before it is dead-lettered.
DEFAULT_JOB_MAX_ATTEMPTS = 5
#: Seconds before the first retry; doubled each attempt up to DEFAULT_JOB_BACKOFF_MAX.
DEFAULT_JOB_BACKOFF = 1.0
DEFAULT_JOB_BACKOFF_MAX = 60.0
#: Seconds a finished job (and its result) is kept.
DEFAULT_JOB_TTL = 24 * 3600.0
#: Jobs queued or running at once; past it a submit gets 503 overloaded.
DEFAULT_JOB_MAX_QUEUED = 10_000
#: Seconds a running job's claim lasts without renewal: then another worker (or the next
#: start of the gateway) takes it again.
DEFAULT_JOB_LEASE = 30.0
#: Callback deliveries: attempts, the first retry's delay (doubled each time) and each POST's timeout.
DEFAULT_CALLBACK_ATTEMPTS = 8
DEFAULT_CALLBACK_BACKOFF = 1.0
DEFAULT_CALLBACK_TIMEOUT = 10.0
#: Seconds of leeway on a token's `exp`, `nbf` and `iat` (clocks drift).
DEFAULT_OAUTH_CLOCK_SKEW = 30.0
#: Fewest seconds between two fetches of an issuer's keys on an unknown `kid`.
DEFAULT_OAUTH_JWKS_MIN_INTERVAL = 10.0
#: Seconds an issuer's keys are kept before they are fetched again.
DEFAULT_OAUTH_JWKS_MAX_AGE = 3600.0
DEFAULT_OAUTH_TIMEOUT = 5.0
#: Seconds a Stripe-style timestamped webhook signature stays valid (Stripe's own tolerance).
DEFAULT_WEBHOOK_REPLAY_WINDOW = 300.0
#: Seconds a trigger's stream entry may stay unacknowledged before another gateway claims it.
DEFAULT_STREAM_CLAIM_AFTER = 30.0
