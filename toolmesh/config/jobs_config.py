"""`toolmesh.toml`'s `[jobs]` section (asynchronous calls) and its `[[triggers]]` (schedules, webhooks
and queues whose messages become jobs, with the cron grammar schedules are written in);
`toolmesh.config` reads them with the rest."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from toolmesh.config import config_defaults as defaults

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
    #: Longest delay between two retries of a job, in seconds.
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
    #: Seconds before a callback's first retry, doubled each time.
    callback_backoff: float = Field(defaults.DEFAULT_CALLBACK_BACKOFF, ge=0)
    #: Seconds one callback POST may take.
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


# -- [[triggers]]: what makes jobs besides callers ------------------------------------------------

#: Cron's five fields: name, lowest, highest (day of week 7 is Sunday again, as 0).
CRON_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: Names allowed in the month and day-of-week fields.
_NAMES = {3: {m: i + 1 for i, m in enumerate(_MONTHS)}, 4: {d: i for i, d in enumerate(_WEEKDAYS)}}
_EVERY_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_TRIGGER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
#: A trigger's possible sources: it has exactly one.
SOURCES = ("schedule", "every", "webhook", "redis_stream", "nats_subject", "postgres_channel")


class CronSpec(BaseModel):
    """A parsed 5-field cron expression: the allowed values of each field. When both days are
    restricted a day matching either fires (as Vixie cron does)."""

    model_config = ConfigDict(frozen=True)

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool
    any_weekday: bool


def _cron_value(text: str, index: int) -> int:
    name, low, high = CRON_FIELDS[index]
    value = _NAMES.get(index, {}).get(text.lower()) if not text.isdigit() else int(text)
    if value is None or not low <= value <= high:
        raise ValueError(f"{name} {text!r} is not from {low} to {high}")
    return value


def parse_cron(expression: str) -> CronSpec:
    """`expression` ("*/5 * * * 1-5"); ValueError naming the field that is wrong."""
    parts = expression.split()
    if len(parts) != 5:
        raise ValueError(f"a schedule has 5 fields (minute hour day month weekday), got {expression!r}")
    sets: list[frozenset[int]] = []
    for index, part in enumerate(parts):
        name, low, high = CRON_FIELDS[index]
        values: set[int] = set()
        for item in part.split(","):
            span, _, step_text = item.partition("/")
            if step_text and (not step_text.isdigit() or int(step_text) < 1):
                raise ValueError(f"{name} step {step_text!r} is not a positive integer")
            step = int(step_text) if step_text else 1
            if span == "*":
                first, last = low, high
            elif "-" in span:
                a, _, b = span.partition("-")
                first, last = _cron_value(a, index), _cron_value(b, index)
                if first > last:
                    raise ValueError(f"{name} range {span!r} runs backwards")
            else:
                first = _cron_value(span, index)
                last = high if step_text else first
            values.update(range(first, last + 1, step))
        sets.append(frozenset(values))
    weekdays = frozenset(d % 7 for d in sets[4])
    return CronSpec(
        minutes=sets[0],
        hours=sets[1],
        days=sets[2],
        months=sets[3],
        weekdays=weekdays,
        any_day=parts[2] == "*",
        any_weekday=parts[4] == "*",
    )


def parse_every(text: str) -> float:
    """ "30s", "5m", "1h", "250ms", "1d" as seconds; ValueError otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*", text)
    if match is None:
        raise ValueError(f"every must be a number and a unit (ms, s, m, h, d) like '30s', got {text!r}")
    seconds = float(match[1]) * _EVERY_UNITS[match[2]]
    if seconds < 1.0:
        raise ValueError(f"every must be at least 1s, got {text!r}")
    return seconds


class TriggerConfig(BaseModel):
    """One `[[triggers]]` entry: a source whose messages (or ticks) become jobs of `function`.
    Exactly one source: `schedule` (cron) or `every`, `webhook`, `redis_stream`, `nats_subject`,
    `postgres_channel`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The trigger's name (`toolmesh triggers pause NAME`); its jobs carry it.
    name: str = Field(pattern=_TRIGGER_NAME)
    #: The qualified function each message calls (checked against the catalog at start-up).
    function: str = Field(min_length=1)
    #: 5-field cron, in `timezone` (default: the gateway's local time zone).
    schedule: str | None = None
    #: The time zone of `schedule` (an IANA name, "Europe/Oslo"); None: the gateway's local one.
    timezone: str | None = None
    #: A fixed interval ("30s", "5m"), ticks aligned to the Unix epoch so every replica agrees.
    every: str | None = None
    #: A schedule's fixed arguments.
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Serves `POST /v1/hooks/<webhook>`.
    webhook: str | None = Field(None, pattern=_TRIGGER_NAME)
    #: The environment variable holding the webhook's HMAC secret (required for a webhook).
    secret_env: str | None = None
    #: Which signature a webhook demands: "github" (X-Hub-Signature-256), "hmac"
    #: (X-Signature-256: sha256=<hex>), "stripe" (Stripe-Signature: t=..,v1=..); None: any of them.
    signature: Literal["github", "hmac", "stripe"] | None = None
    #: Seconds a timestamped (Stripe) signature is accepted after its time.
    replay_window: float = Field(defaults.DEFAULT_WEBHOOK_REPLAY_WINDOW, gt=0)
    #: A Redis stream whose entries are calls (its fields, or one field `json` holding the object),
    #: read in a consumer group of this trigger's on `redis_url` (default: `[state] url`).
    redis_stream: str | None = Field(None, min_length=1)
    #: With `redis_stream`: the Redis holding it; None: `[state] url`.
    redis_url: str | None = None
    #: Seconds a stream entry may stay unacknowledged by its gateway before another claims it
    #: (its gateway died mid-entry).
    claim_after: float = Field(defaults.DEFAULT_STREAM_CLAIM_AFTER, gt=0)
    #: A NATS subject whose JetStream messages are calls, read by a durable consumer named after
    #: the trigger on the stream `nats_stream` (default: the stream capturing the subject, made
    #: when none does) of the server at `nats_url`.
    nats_subject: str | None = Field(None, min_length=1)
    #: With `nats_subject`: the NATS server, e.g. "nats://127.0.0.1:4222".
    nats_url: str | None = None
    #: With `nats_subject`: the JetStream stream to read; None: the one capturing the subject.
    nats_stream: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    #: A PostgreSQL channel (LISTEN) whose each NOTIFY payload is a call, on `postgres_url`.
    postgres_channel: str | None = Field(None, min_length=1, max_length=63)
    #: With `postgres_channel`: the PostgreSQL server to LISTEN on (a libpq URL).
    postgres_url: str | None = None
    #: Attempts of each of this trigger's jobs before it is dead (default: `[jobs] max_attempts`).
    max_attempts: int | None = Field(None, ge=1, le=100)
    #: Pass the whole payload as this one argument (default: the payload's fields are the arguments).
    argument: str | None = Field(None, min_length=1)
    #: The key (by name) whose `/v1/jobs` lists this trigger's jobs and whose name runs them;
    #: "anonymous" is the open gateway's caller.
    owner: str = "anonymous"
    #: Starts paused (`toolmesh triggers resume NAME` starts it).
    paused: bool = False

    @field_validator("schedule")
    @classmethod
    def _cron(cls, schedule: str | None) -> str | None:
        if schedule is not None:
            parse_cron(schedule)
        return schedule

    @field_validator("every")
    @classmethod
    def _every(cls, every: str | None) -> str | None:
        if every is not None:
            parse_every(every)
        return every

    @field_validator("timezone")
    @classmethod
    def _zone(cls, zone: str | None) -> str | None:
        if zone is not None:
            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {zone!r} (an IANA name like 'Europe/Paris')") from None
        return zone

    @model_validator(mode="after")
    def _one_source(self) -> TriggerConfig:
        sources = [k for k in SOURCES if getattr(self, k) is not None]
        if len(sources) != 1:
            raise ValueError(
                f"trigger {self.name!r} needs exactly one source ({', '.join(SOURCES)}),"
                f" got {', '.join(sources) or 'none'}"
            )
        if self.timezone is not None and self.schedule is None:
            raise ValueError(f"trigger {self.name!r}: timezone goes with a cron schedule")
        if self.arguments and not self.scheduled:
            raise ValueError(f"trigger {self.name!r}: fixed arguments go with a schedule or every")
        if self.webhook is not None and self.secret_env is None:
            raise ValueError(f"trigger {self.name!r}: a webhook needs secret_env (its signing secret)")
        if self.webhook is None and (self.secret_env is not None or self.signature is not None):
            raise ValueError(f"trigger {self.name!r}: secret_env and signature go with a webhook")
        if self.redis_url is not None and self.redis_stream is None:
            raise ValueError(f"trigger {self.name!r}: redis_url goes with redis_stream")
        if self.redis_url is not None and not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(
                f"trigger {self.name!r}: redis_url must start with redis://, rediss:// or unix://"
            )
        self._check_nats_and_postgres()
        if self.argument is not None and self.scheduled:
            raise ValueError(f"trigger {self.name!r}: argument goes with a message source, not a schedule")
        return self

    def _check_nats_and_postgres(self) -> None:
        if self.nats_subject is not None and self.nats_url is None:
            raise ValueError(f"trigger {self.name!r}: nats_subject needs nats_url (nats://host:4222)")
        if self.nats_subject is None and (self.nats_url is not None or self.nats_stream is not None):
            raise ValueError(f"trigger {self.name!r}: nats_url and nats_stream go with nats_subject")
        if self.nats_url is not None and not self.nats_url.startswith(("nats://", "tls://")):
            raise ValueError(f"trigger {self.name!r}: nats_url must start with nats:// or tls://")
        if self.postgres_channel is not None and self.postgres_url is None:
            raise ValueError(f"trigger {self.name!r}: postgres_channel needs postgres_url")
        if self.postgres_channel is None and self.postgres_url is not None:
            raise ValueError(f"trigger {self.name!r}: postgres_url goes with postgres_channel")
        if self.postgres_url is not None and not self.postgres_url.startswith(
            ("postgresql://", "postgres://")
        ):
            raise ValueError(f"trigger {self.name!r}: postgres_url must start with postgresql://")

    @property
    def scheduled(self) -> bool:
        return self.schedule is not None or self.every is not None

    def cron(self) -> CronSpec | None:
        return None if self.schedule is None else parse_cron(self.schedule)

    def interval(self) -> float | None:
        return None if self.every is None else parse_every(self.every)

    # The names the gateways use in the queue servers (render's KEDA scalers name them too).

    def redis_group(self, project: str) -> str:
        """The consumer group the gateways of `project` read `redis_stream` in."""
        return f"toolmesh:{project}:{self.name}"

    def nats_consumer(self, project: str) -> str:
        """The durable JetStream consumer of the gateways of `project` (no `.`, `*`, `>`, spaces)."""
        return re.sub(r"[^A-Za-z0-9_-]", "_", f"toolmesh_{project}_{self.name}")

    def nats_stream_made(self) -> str:
        """The stream made for `nats_subject` when `nats_stream` is unset and none captures it."""
        return re.sub(r"[^A-Za-z0-9_-]", "_", f"toolmesh_{self.name}")


def check_triggers(triggers: tuple[TriggerConfig, ...]) -> tuple[TriggerConfig, ...]:
    """Names and webhook paths are each one trigger's."""
    for what, names in (
        ("triggers names", [t.name for t in triggers]),
        ("triggers webhooks", [t.webhook for t in triggers if t.webhook is not None]),
    ):
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"{what} repeat: {', '.join(repeated)}")
    return triggers


Triggers = Annotated[tuple[TriggerConfig, ...], AfterValidator(check_triggers)]
