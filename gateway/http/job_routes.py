"""The HTTP routes that make and show jobs: thin adapters over `gateway.jobs.JobService` and,
for webhooks, `gateway.triggers.TriggerService`.

POST /v1/functions/{name}/invoke    with `Prefer: respond-async` (app.py sends it here): 202
POST /v1/jobs                       {"function", "arguments"?, "callback_url"?}: 202
GET  /v1/jobs?status=dead&limit=    the caller's jobs, newest first (dead: its dead letters)
GET  /v1/jobs/{id}                  a job: status, attempts, result or error, callback
POST /v1/jobs/{id}/retry            queue a dead, failed or cancelled job again: 202
DELETE /v1/jobs/{id}                cancel a queued or running job (or one waiting for answers)
POST /v1/hooks/{name}               a webhook trigger: signed body -> a job of its function, 202
                                    (no API key: the signature proves the sender; 401 without it)

A 202 answers the job document with `Location: /v1/jobs/{id}`. With the invoke route the
body is the arguments, as for a direct call, and a callback URL comes in `X-Callback-Url`.
A submit with an `Idempotency-Key` header makes one job per key: a repeat answers that job
(202 while it is queued or running, 200 once finished) with `Idempotent-Replayed: true`; the
key with another function or other arguments is a 422 (`idempotency_mismatch`).
"""

from __future__ import annotations

from json import dumps

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolmesh.errors import InvalidRequest, TriggerNotFound, Unavailable
from toolmesh.gateway.core.requests import CallOptions, InvokeRequest
from toolmesh.gateway.http.adapt import body, caller, json_response
from toolmesh.gateway.http.payloads import parse_json
from toolmesh.gateway.jobs.job import JOBS_PATH, Job
from toolmesh.gateway.jobs.job_service import JobService
from toolmesh.gateway.triggers import webhooks
from toolmesh.gateway.triggers.trigger_host import TriggerHost
from toolmesh.gateway.triggers.webhooks import HOOKS_PATH

CALLBACK_HEADER = "x-callback-url"
IDEMPOTENCY_HEADER = "idempotency-key"
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


def submitted(job: Job, made: bool, *, applied: bool = False) -> Response:
    """The answer to a submit: 202, or for a repeat of a keyed one whose job finished, 200."""
    if made or not job.status.finished:
        response = accepted(job, applied=applied)
    else:
        response = json_response(job.document(), 200)
        response.headers["Location"] = f"{JOBS_PATH}/{job.id}"
    if not made:
        response.headers["Idempotent-Replayed"] = "true"
    return response


async def submit_invoke(jobs: JobService, request: Request, call: InvokeRequest) -> Response:
    """The invoke route's asynchronous form."""
    principal = caller(jobs.mesh, request)
    job, made = await jobs.submit_once(
        principal, call, request.headers.get(CALLBACK_HEADER), request.headers.get(IDEMPOTENCY_HEADER)
    )
    return submitted(job, made, applied=True)


def _limit(value: str) -> int:
    if not value.isdigit():
        raise InvalidRequest(f"limit must be a positive integer, got {value!r}", param="limit")
    return int(value)


def job_routes(jobs: JobService, triggers: TriggerHost | None = None) -> list[Route]:
    mesh = jobs.mesh

    async def hook(request: Request) -> Response:
        name = request.path_params["name"]
        trigger = None if triggers is None else triggers.service.webhooks.get(name)
        if triggers is None or trigger is None:
            raise TriggerNotFound(f"no webhook {name!r}", param="name")
        raw = await body(mesh, request)  # over [gateway] max_body_bytes: 413, nothing read past it
        webhooks.verify(trigger, triggers.secrets[trigger.name], request.headers, raw)
        if await triggers.service.paused(trigger.name):
            raise Unavailable(f"webhook {name!r} is paused; send it again later", retry_after=60.0)
        return accepted(await triggers.service.fire(trigger, webhooks.message(request.headers, raw)))

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
        job, made = await jobs.submit_once(principal, call, callback, request.headers.get(IDEMPOTENCY_HEADER))
        return submitted(job, made)

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

    async def jobs_root(request: Request) -> Response:
        return await (submit(request) if request.method == "POST" else listing(request))

    async def one_job(request: Request) -> Response:
        return await (cancel(request) if request.method == "DELETE" else get(request))

    # One route per path, so that a wrong method is a 405 naming the path's methods.
    return [
        Route(JOBS_PATH, jobs_root, methods=["GET", "POST"]),
        Route(JOBS_PATH + "/{id}", one_job, methods=["GET", "DELETE"]),
        Route(JOBS_PATH + "/{id}/retry", retry, methods=["POST"]),
        Route(HOOKS_PATH + "/{name}", hook, methods=["POST"]),
    ]
