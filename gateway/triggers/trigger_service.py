"""`TriggerService`: the core every trigger source calls. Transport-free, like `JobService`.

A source hands it a message (a webhook's body, a stream entry's object, a schedule's fixed
arguments) and where the message came from; the service turns it into a job of the trigger's
function, owned by the trigger's `owner`, tagged with the trigger's name. A message that does
not fit the function (not a JSON object, a missing or unknown argument, a value of the wrong
type, a function that no longer exists) is recorded as a dead job naming the problem, never
raised back at the source: a queue is never blocked by one bad message.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmesh.config import ConfigError
from toolmesh.config.jobs_config import TriggerConfig
from toolmesh.errors import FunctionNotFound, InvalidRequest, ToolmeshError, TriggerNotFound
from toolmesh.gateway.core.auth import MESH
from toolmesh.gateway.jobs.argument_check import check_arguments
from toolmesh.gateway.jobs.job import Job, JobStatus, new_job_id
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.triggers.ticks import TriggerTicks

log = logging.getLogger("toolmesh.triggers")

#: A dead job's `error.code` for a message that cannot be arguments at all.
NOT_AN_OBJECT = "invalid_message"
#: Messages a queue source records at once: their store writes overlap. Redis overlaps them on
#: its connections (the shared client has 64; 32 more than doubled the rate over 8 in
#: bench/triggers.py); SQLite writes one at a time on its thread, where more only contend.
AT_ONCE_REDIS = 32
AT_ONCE_SQLITE = 8


@dataclass(frozen=True)
class TriggerMessage:
    """What a source received: `payload` decoded from JSON, or `problem` saying why it is not."""

    payload: Any
    #: Where it came from, kept as the job's request id ("tick:<ms>", "hook:<delivery>", ...).
    source: str
    problem: str | None = None
    #: The bytes as received, kept as a dead job's arguments when they were not JSON.
    raw: bytes = b""
    #: What names the message in its source (a stream entry's id): its job's id is made from it,
    #: so a message delivered twice (its gateway died before acknowledging it) is one job.
    key: str = ""
    #: The payload is a stream entry's fields, all strings: those the function types otherwise
    #: are read as JSON ("5" for an integer argument).
    fields: bool = False


class TriggerService:
    def __init__(
        self,
        jobs: JobService,
        triggers: Sequence[TriggerConfig],
        ticks: TriggerTicks,
        at_once: int = AT_ONCE_SQLITE,
    ) -> None:
        self.jobs = jobs
        self.at_once = at_once
        self.mesh = jobs.mesh
        self.ticks = ticks
        self.triggers: Mapping[str, TriggerConfig] = {}
        self.webhooks: Mapping[str, TriggerConfig] = {}
        self.use(triggers)

    def use(self, triggers: Iterable[TriggerConfig]) -> None:
        """Serve `triggers` from now on (at start-up, and when the table is reloaded)."""
        listed = tuple(triggers)
        self.triggers = {t.name: t for t in listed}
        self.webhooks = {t.webhook: t for t in listed if t.webhook}
        attempts = self.jobs.runner.trigger_attempts
        attempts.clear()
        attempts.update({t.name: t.max_attempts for t in listed if t.max_attempts is not None})

    async def start(self) -> None:
        self.check(self.triggers.values())
        await self.ticks.open()

    def check(self, triggers: Iterable[TriggerConfig]) -> None:
        """ConfigError for a trigger naming no function the gateway serves, or (with keys) an
        owner that is no key, whose `/v1/jobs` would list its jobs to nobody."""
        keys = self.mesh.auth.key_names()
        for trigger in triggers:
            if keys and trigger.owner not in keys:
                raise ConfigError(
                    f"triggers.{trigger.name}: owner {trigger.owner!r} is no key's name; with [[keys]],"
                    " name the key whose /v1/jobs lists this trigger's jobs"
                )
            try:
                self.mesh.function(trigger.function, MESH)
            except FunctionNotFound:
                raise ConfigError(
                    f"triggers.{trigger.name}: function {trigger.function!r} is not served by any runtime"
                ) from None

    async def stop(self) -> None:
        await self.ticks.close()

    def get(self, name: str) -> TriggerConfig:
        found = self.triggers.get(name)
        if found is None:
            raise TriggerNotFound(f"no trigger {name!r}", param="name")
        return found

    async def paused(self, name: str) -> bool:
        trigger = self.get(name)
        said = await self.ticks.paused(name)
        return trigger.paused if said is None else said

    async def set_paused(self, name: str, paused: bool) -> None:
        """Pause or resume a trigger for every replica of the project."""
        self.get(name)
        await self.ticks.set_paused(name, paused)

    async def fire(self, trigger: TriggerConfig, message: TriggerMessage) -> Job:
        """Record `message` as a job of `trigger` and wake a worker: queued when it fits the
        function, dead (naming why) when it does not. Raises only what the store does
        (`Overloaded` when the queue is full, `StateUnavailable`), so the source keeps the message."""
        job = Job(
            id=message_job_id(trigger.name, message.key) if message.key else new_job_id(),
            owner=trigger.owner,
            function=trigger.function,
            arguments=message.raw or b"{}",
            request_id=message.source,
            trigger=trigger.name,
        )
        try:
            spec = self.mesh.function(trigger.function, MESH)
            job.function = spec.qualified_name
            job.idempotent = spec.annotations.idempotent or spec.annotations.read_only
            job.arguments = self._arguments(trigger, message, spec.input_schema)
            check_arguments(spec.input_schema, job.arguments)
        except ToolmeshError as exc:
            job.status, job.finished = JobStatus.DEAD, time.time()
            job.error = {"code": exc.code, "message": f"trigger {trigger.name!r}: {exc.message}"}
        await self.jobs.store.add(job, self.jobs.config.max_queued)
        self.mesh.metrics.trigger_ran(trigger.name)
        if job.status is JobStatus.DEAD:
            self.mesh.metrics.trigger_failed(trigger.name)
            log.warning(
                "a trigger's message fits no call; its job is dead",
                extra={"trigger": trigger.name, "job": job.id, "why": job.error},
            )
        else:
            self.jobs.runner.wake()
        return job

    def _arguments(self, trigger: TriggerConfig, message: TriggerMessage, schema: Mapping[str, Any]) -> bytes:
        if message.problem is not None:
            raise _NotAnObject(message.problem)
        payload = message.payload
        if message.fields and isinstance(payload, dict):
            payload = _typed_fields(payload, schema.get("properties") or {})
        if trigger.argument is not None:
            return json.dumps({trigger.argument: payload}).encode()
        if not isinstance(payload, dict):
            raise _NotAnObject(
                "the message must be a JSON object (its fields are the arguments),"
                f" got {type(payload).__name__}; or set argument = NAME to pass it whole"
            )
        return json.dumps(payload).encode()


def message_job_id(trigger: str, key: str) -> str:
    """The job id of `trigger`'s message named `key` in its source: the same at every delivery."""
    return "job_" + hashlib.sha256(f"{trigger}\0{key}".encode()).hexdigest()[:24]


def _typed_fields(fields: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    typed = dict(fields)
    for name, value in fields.items():
        kind = (properties.get(name) or {}).get("type")
        if isinstance(value, str) and kind not in (None, "string"):
            with contextlib.suppress(ValueError):
                typed[name] = json.loads(value)
    return typed


class _NotAnObject(InvalidRequest):
    code = NOT_AN_OBJECT
