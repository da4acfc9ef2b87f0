"""The OpenAPI paths of jobs: /v1/jobs, the invoke route's asynchronous form (`Prefer:
respond-async`), and the webhooks that make jobs (/v1/hooks/{name})."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolmesh.gateway.jobs.job import JOBS_PATH, CallbackState, JobStatus
from toolmesh.gateway.triggers.webhooks import HOOKS_PATH


def job_openapi(paths: dict[str, Any], errors: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """Add the job routes to the OpenAPI `paths` (and the invoke route's asynchronous form);
    returns the schemas they use. `errors(*statuses)` renders error responses."""
    job_ref = {"$ref": "#/components/schemas/Job"}
    job_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    accepted_job = {
        "description": "Queued: the job, with `Location: /v1/jobs/{id}`",
        "headers": {"Location": {"schema": {"type": "string"}}},
        "content": {"application/json": {"schema": job_ref}},
    }
    invoke = paths["/v1/functions/{name}/invoke"]["post"]
    invoke["parameters"] = [
        *invoke["parameters"],
        {
            "name": "Prefer",
            "in": "header",
            "required": False,
            "description": "`respond-async`: queue the call as a job and answer 202 at once",
            "schema": {"type": "string"},
        },
        {
            "name": "X-Callback-Url",
            "in": "header",
            "required": False,
            "description": "With `Prefer: respond-async`: where the finished job is POSTed, signed",
            "schema": {"type": "string"},
        },
    ]
    invoke["responses"]["202"] = accepted_job
    submit_body = {
        "type": "object",
        "required": ["function"],
        "additionalProperties": False,
        "properties": {
            "function": {"type": "string"},
            "arguments": {"type": "object"},
            "callback_url": {"type": "string", "format": "uri"},
        },
    }
    paths[JOBS_PATH] = {
        "post": {
            "summary": "Call a function asynchronously: queue it as a job",
            "operationId": "submitJob",
            "requestBody": {"required": True, "content": {"application/json": {"schema": submit_body}}},
            "responses": {"202": accepted_job, **errors(400, 401, 403, 404, 413, 422, 429, 503)},
        },
        "get": {
            "summary": "The caller's jobs, newest first (`status=dead`: its dead-letter list)",
            "operationId": "listJobs",
            "parameters": [
                {
                    "name": "status",
                    "in": "query",
                    "required": False,
                    "schema": {"enum": [s.value for s in JobStatus]},
                },
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "integer", "minimum": 1},
                },
            ],
            "responses": {
                "200": {
                    "description": "Jobs",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"jobs": {"type": "array", "items": job_ref}},
                            }
                        }
                    },
                },
                **errors(400, 401),
            },
        },
    }
    paths[JOBS_PATH + "/{id}"] = {
        "get": {
            "summary": "A job: its status, attempts, and result or error once finished",
            "operationId": "getJob",
            "parameters": [job_id],
            "responses": {
                "200": {"description": "The job", "content": {"application/json": {"schema": job_ref}}},
                **errors(401, 404),
            },
        },
        "delete": {
            "summary": "Cancel a queued or running job",
            "operationId": "cancelJob",
            "parameters": [job_id],
            "responses": {
                "200": {
                    "description": "The cancelled job",
                    "content": {"application/json": {"schema": job_ref}},
                },
                **errors(400, 401, 404),
            },
        },
    }
    paths[JOBS_PATH + "/{id}/retry"] = {
        "post": {
            "summary": "Queue a dead, failed or cancelled job again",
            "operationId": "retryJob",
            "parameters": [job_id],
            "responses": {"202": accepted_job, **errors(400, 401, 403, 404, 429)},
        }
    }
    paths[HOOKS_PATH + "/{name}"] = {
        "post": {
            "summary": "A webhook trigger ([[triggers]] webhook = NAME): its signed body becomes a job",
            "description": "Signed with the trigger's secret: X-Hub-Signature-256 (GitHub), X-Signature-256"
            " (sha256=<hex HMAC of the body>) or Stripe-Signature (t=<unix>,v1=<hex HMAC of '<t>.<body>'>,"
            " within the replay window). No API key. A body that does not fit the function is a dead job.",
            "operationId": "webhook",
            "security": [{}],
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {}}}},
            "responses": {"202": accepted_job, **errors(401, 404, 413, 503)},
        }
    }
    return {"Job": _JOB_SCHEMA}


_JOB_SCHEMA = {
    "type": "object",
    "required": ["id", "function", "status", "status_url", "attempts", "created_at", "updated_at"],
    "properties": {
        "id": {"type": "string"},
        "function": {"type": "string"},
        "status": {"enum": [s.value for s in JobStatus]},
        "status_url": {"type": "string"},
        "attempts": {"type": "integer"},
        "created_at": {"type": "number", "description": "Unix time"},
        "updated_at": {"type": "number"},
        "finished_at": {"type": "number"},
        "request_id": {"type": "string"},
        "trigger": {"type": "string", "description": "The [[triggers]] entry that made the job"},
        "result": {"$ref": "#/components/schemas/Result"},
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
        "callback": {
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "state": {"enum": [s.value for s in CallbackState]},
                "attempts": {"type": "integer"},
            },
        },
    },
}
