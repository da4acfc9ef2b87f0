"""Asynchronous calls over HTTP: thin adapters over `gateway.jobs.JobService`.

POST /v1/functions/{name}/invoke    with `Prefer: respond-async` (app.py sends it here): 202
POST /v1/jobs                       {"function", "arguments"?, "callback_url"?}: 202
GET  /v1/jobs?status=dead&limit=    the caller's jobs, newest first (dead: its dead letters)
GET  /v1/jobs/{id}                  a job: status, attempts, result or error, callback
POST /v1/jobs/{id}/retry            queue a dead, failed or cancelled job again: 202
DELETE /v1/jobs/{id}                cancel a queued job

A 202 answers the job document with `Location: /v1/jobs/{id}`. With the invoke route the
body is the arguments, as for a direct call, and a callback URL comes in `X-Callback-Url`.
"""

from __future__ import annotations

from json import dumps

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest
from toolmesh.gateway.http.adapt import body, caller, json_response
from toolmesh.gateway.http.payloads import parse_json
from toolmesh.gateway.jobs.job import JOBS_PATH, Job
from toolmesh.gateway.jobs.job_service import JobService

CALLBACK_HEADER = "x-callback-url"
_SUBMIT_FIELDS = {"function", "arguments", "callback_url"}


def wants_async(prefer: str | None) -> bool:
    """Whether a `Prefer` header (RFC 7240) asks for `respond-async`."""
    if not prefer:
        return False
    return any(part.split(";")[0].strip().lower() == "respond-async" for part in prefer.split(","))


def accepted(job: Job, *, applied: bool = False) -> Response:
    response = json_response(job.document(), 202)
    response.headers["Location"] = f"{JOBS_PATH}/{job.id}"
    if applied:
        response.headers["Preference-Applied"] = "respond-async"
    return response


async def submit_invoke(jobs: JobService, request: Request, call: InvokeRequest) -> Response:
    """The invoke route's asynchronous form."""
    principal = caller(jobs.mesh, request)
    job = await jobs.submit(principal, call, request.headers.get(CALLBACK_HEADER))
    return accepted(job, applied=True)


def _limit(value: str) -> int:
    if not value.isdigit():
        raise InvalidRequest(f"limit must be a positive integer, got {value!r}", param="limit")
    return int(value)


def job_routes(jobs: JobService) -> list[Route]:
    mesh = jobs.mesh

    async def submit(request: Request) -> Response:
        principal = caller(mesh, request)
        document = parse_json(await body(mesh, request), mesh.config.max_json_depth)
        if not isinstance(document, dict):
            raise InvalidRequest('the body must be {"function", "arguments", "callback_url"?}', param="body")
        unknown = sorted(set(document) - _SUBMIT_FIELDS)
        if unknown:
            raise InvalidRequest(f"unknown field {unknown[0]!r}", param=unknown[0])
        function, arguments = document.get("function"), document.get("arguments", {})
        if not isinstance(function, str) or not function:
            raise InvalidRequest("function must be a non-empty string", param="function")
        if not isinstance(arguments, dict):
            raise InvalidRequest("arguments must be a JSON object", param="arguments")
        call = InvokeRequest(function, dumps(arguments).encode(), CallOptions.from_headers(request.headers))
        callback = document.get("callback_url")
        if callback is not None and not isinstance(callback, str):
            raise InvalidRequest("callback_url must be a string", param="callback_url")
        return accepted(await jobs.submit(principal, call, callback))

    async def listing(request: Request) -> Response:
        params = request.query_params
        found = await jobs.list(
            caller(mesh, request), params.get("status"), _limit(params.get("limit", "100"))
        )
        return json_response({"jobs": [job.document() for job in found]})

    async def get(request: Request) -> Response:
        job = await jobs.get(caller(mesh, request), request.path_params["id"])
        return json_response(job.document())

    async def retry(request: Request) -> Response:
        return accepted(await jobs.retry(caller(mesh, request), request.path_params["id"]))

    async def cancel(request: Request) -> Response:
        job = await jobs.cancel(caller(mesh, request), request.path_params["id"])
        return json_response(job.document())

    return [
        Route(JOBS_PATH, submit, methods=["POST"]),
        Route(JOBS_PATH, listing, methods=["GET"]),
        Route(JOBS_PATH + "/{id}", get, methods=["GET"]),
        Route(JOBS_PATH + "/{id}", cancel, methods=["DELETE"]),
        Route(JOBS_PATH + "/{id}/retry", retry, methods=["POST"]),
    ]
