"""`toolmesh.toml`'s `[jobs]` section (asynchronous calls); `toolmesh.config` reads it with the rest."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolmesh import config_defaults as defaults

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_rule(rule: str) -> Network | str:
    """A `callback_hosts` entry: a network (an address is a network of one) or a host glob."""
    try:
        return ipaddress.ip_network(rule, strict=False)
    except ValueError:
        pass
    glob = rule.strip().lower().rstrip(".")
    if not glob or not glob.isascii() or not all(c.isalnum() or c in "-.*" for c in glob):
        raise ValueError(f"callback_hosts entry {rule!r} is neither a network nor a host name or glob")
    return glob


class JobsConfig(BaseModel):
    """Asynchronous calls (`Prefer: respond-async`): a queue of jobs in a SQLite file (in Redis
    when `[state]` points at one), run by workers in the gateway, with retries, a dead-letter
    list and signed result callbacks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Off: an asynchronous submit answers 400 and no jobs file is opened.
    enabled: bool = True
    #: The SQLite file; None: `jobs.sqlite3` in the project's data directory ([project]).
    #: Gateways of one project that share a file share one queue; another project's gateway
    #: on the same file never sees its jobs. Unused with Redis.
    path: Path | None = None
    #: Jobs run at once by this gateway.
    workers: int = Field(defaults.DEFAULT_JOB_WORKERS, ge=1, le=256)
    #: Seconds one attempt of a job may run; None: `[gateway] call_timeout`, as a direct call.
    #: The function's own timeout (its runtime's `timeout`, or the decorator's) still applies.
    call_timeout: float | None = Field(None, gt=0)
    #: Attempts a job gets while its runtime is unavailable or overloaded; then it is dead.
    max_attempts: int = Field(defaults.DEFAULT_JOB_MAX_ATTEMPTS, ge=1, le=100)
    #: Seconds before a job's first retry, doubled each time up to `backoff_max`.
    backoff: float = Field(defaults.DEFAULT_JOB_BACKOFF, ge=0)
    backoff_max: float = Field(defaults.DEFAULT_JOB_BACKOFF_MAX, ge=0)
    #: Seconds a finished job (succeeded, failed or dead) is kept; then it is purged.
    ttl: float = Field(defaults.DEFAULT_JOB_TTL, gt=0)
    #: Jobs queued or running at once; a submit past it gets 503 `overloaded`.
    max_queued: int = Field(defaults.DEFAULT_JOB_MAX_QUEUED, ge=1)
    #: Seconds a running job's claim lasts unless renewed (every third of it): a job of a
    #: gateway that was killed runs again once its claim has lapsed.
    lease: float = Field(defaults.DEFAULT_JOB_LEASE, ge=0.5)
    #: The environment variable holding the secret that signs callbacks (HMAC-SHA256);
    #: without one, a submit with a callback URL is refused.
    callback_secret_env: str | None = None
    #: Deliveries of a callback before it is given up, the first retry's delay in seconds
    #: (doubled each time) and each POST's timeout.
    callback_attempts: int = Field(defaults.DEFAULT_CALLBACK_ATTEMPTS, ge=1, le=100)
    callback_backoff: float = Field(defaults.DEFAULT_CALLBACK_BACKOFF, ge=0)
    callback_timeout: float = Field(defaults.DEFAULT_CALLBACK_TIMEOUT, gt=0)
    #: Hosts (globs: "hooks.internal.example", "*.svc.cluster.local") and networks
    #: ("10.0.0.0/8", "127.0.0.1") callbacks may reach besides public addresses; loopback,
    #: private, link-local (cloud metadata) and other non-public addresses are refused otherwise.
    callback_hosts: tuple[str, ...] = ()

    @field_validator("callback_hosts")
    @classmethod
    def _rules(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        for rule in rules:
            parse_rule(rule)
        return rules

    @field_validator("path")
    @classmethod
    def _expand(cls, path: Path | None) -> Path | None:
        return None if path is None else path.expanduser()
