"""Asynchronous calls from the HTTP clients: `RemoteJob`, and what `submit`, `get_job`, `cancel_job`,
`retry_job` and `list_jobs` send (see `http_requests` for how the two clients share them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from toolmesh.client.http_requests import Request, invoke
from toolmesh.runtimes.functions.results import Result, result_from_document

JOBS_PATH = "/v1/jobs"
#: A job in one of these states will not change again (unless retried).
FINISHED = frozenset({"succeeded", "failed", "dead", "cancelled"})


@dataclass(frozen=True)
class RemoteJob:
    """One asynchronous call, as the gateway last reported it."""

    id: str
    function: str
    #: "queued", "running", "succeeded", "failed", "dead" (every attempt found its runtime
    #: unavailable: the dead-letter list) or "cancelled".
    status: str
    attempts: int
    #: The call's Result once an attempt has ended (an error result for a failed one).
    result: Result | None
    #: Everything the gateway said about the job (timestamps, the callback's delivery...).
    document: Mapping[str, Any]

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


def job(document: Mapping[str, Any]) -> RemoteJob:
    found = document.get("result")
    return RemoteJob(
        id=str(document["id"]),
        function=str(document["function"]),
        status=str(document["status"]),
        attempts=int(document.get("attempts") or 0),
        result=None if found is None else result_from_document(found),
        document=document,
    )


def _job_path(job_id: str) -> str:
    return f"{JOBS_PATH}/{quote(job_id, safe='')}"


def submit(
    name: str,
    arguments: Mapping[str, Any] | None,
    callback_url: str | None,
    request_id: str | None,
    session_id: str | None,
) -> Request[RemoteJob]:
    call = invoke(name, arguments, request_id, session_id)
    headers = {**call.headers, "prefer": "respond-async"}
    if callback_url is not None:
        headers["x-callback-url"] = callback_url
    return Request(call.method, call.path, job, content=call.content, headers=headers)


def get_job(job_id: str) -> Request[RemoteJob]:
    return Request("GET", _job_path(job_id), job)


def cancel_job(job_id: str) -> Request[RemoteJob]:
    return Request("DELETE", _job_path(job_id), job)


def retry_job(job_id: str) -> Request[RemoteJob]:
    return Request("POST", _job_path(job_id) + "/retry", job)


def list_jobs(status: str | None, limit: int) -> Request[list[RemoteJob]]:
    params = {"limit": str(limit)}
    if status is not None:
        params["status"] = status
    return Request("GET", JOBS_PATH, lambda body: [job(item) for item in body["jobs"]], params=params)
