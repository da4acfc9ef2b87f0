"""A job: one asynchronous call, from submit to its result (and the callback that carries it)."""

from __future__ import annotations

import enum
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any


class JobStatus(enum.StrEnum):
    #: Waiting for a worker (new, or waiting out the backoff after an unavailable runtime).
    QUEUED = "queued"
    RUNNING = "running"
    #: The function returned.
    SUCCEEDED = "succeeded"
    #: The call ended in an error that another attempt would repeat: the function raised,
    #: bad arguments, a timeout, a limit of its runtime. Never retried on its own.
    FAILED = "failed"
    #: Every attempt found the runtime unavailable or overloaded: the dead-letter list.
    DEAD = "dead"
    #: Cancelled by its caller while queued or running (a running call is stopped).
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (JobStatus.QUEUED, JobStatus.RUNNING)


class CallbackState(enum.StrEnum):
    #: The job has no callback URL.
    NONE = "none"
    #: To be delivered once the job is finished (or being delivered, retried with backoff).
    PENDING = "pending"
    DELIVERED = "delivered"
    #: Every delivery failed; the result is still in the job.
    FAILED = "failed"


#: Where a job's status is read over HTTP.
JOBS_PATH = "/v1/jobs"


#: The error of a job that was running, not idempotent, when its gateway stopped (killed, or
#: drained past its grace): whether its effect happened is not known, so it is not run again.
OUTCOME_UNKNOWN = {
    "code": "outcome_unknown",
    "message": "outcome unknown: the gateway running it stopped mid-run;"
    " check the effect before submitting again",
}


def new_job_id() -> str:
    return "job_" + secrets.token_hex(12)


@dataclass(slots=True)
class Job:
    id: str
    #: The principal (key name) that submitted it: only it sees the job.
    owner: str
    #: The qualified function name.
    function: str
    #: The arguments, a JSON object as bytes.
    arguments: bytes
    request_id: str = ""
    session_id: str = ""
    status: JobStatus = JobStatus.QUEUED
    attempts: int = 0
    #: The invoke document (result_json) of the last attempt, once there is one.
    result: bytes | None = None
    #: Why the job failed or is dead: {"code", "message"}.
    error: dict[str, str] | None = None
    callback_url: str | None = None
    callback_state: CallbackState = CallbackState.NONE
    callback_attempts: int = 0
    #: Unix times.
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    finished: float | None = None
    #: What its caller answered to what the function asked (MCP tasks, tasks/update), a JSON
    #: object by ask key: every attempt replays the call with them.
    answers: bytes | None = None
    #: The `[[triggers]]` entry whose tick or message made the job ("" for a caller's).
    trigger: str = ""
    #: Whether its function may run twice (annotated `idempotent` or `read_only` when the job
    #: was submitted): only then is a job whose gateway died mid-run run again; another ends
    #: failed, OUTCOME_UNKNOWN, for its caller to check the effect.
    idempotent: bool = False

    def document(self) -> dict[str, Any]:
        """The job as its owner reads it (GET /v1/jobs/{id}, callbacks)."""
        doc: dict[str, Any] = {
            "id": self.id,
            "function": self.function,
            "status": self.status.value,
            "status_url": f"{JOBS_PATH}/{self.id}",
            "attempts": self.attempts,
            "created_at": round(self.created, 3),
            "updated_at": round(self.updated or self.created, 3),
        }
        if self.finished is not None:
            doc["finished_at"] = round(self.finished, 3)
        if self.request_id:
            doc["request_id"] = self.request_id
        if self.trigger:
            doc["trigger"] = self.trigger
        if self.result is not None:
            doc["result"] = json.loads(self.result)
        if self.error is not None:
            doc["error"] = self.error
        if self.callback_url is not None:
            doc["callback"] = {
                "url": self.callback_url,
                "state": self.callback_state.value,
                "attempts": self.callback_attempts,
            }
        return doc
