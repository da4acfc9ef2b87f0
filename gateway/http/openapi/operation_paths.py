"""The OpenAPI paths for operating the gateway: health, readiness, metrics, reload, triggers and
the recent invocations."""

from __future__ import annotations

from typing import Any

from toolmesh.gateway.core.recent_invocations import CAPACITY, DEFAULT_LIMIT
from toolmesh.gateway.http.openapi.api_schemas import errors, json_body, ref

#: One group of a Prometheus HTTP service discovery answer.
TARGET_GROUP = {
    "type": "object",
    "required": ["targets", "labels"],
    "properties": {
        "targets": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
_RESOURCE = {
    "type": "object",
    "required": ["uri", "function", "template"],
    "properties": {
        "uri": {"type": "string", "description": "The URI, or a URI template with {name} parts"},
        "function": {"type": "string", "description": "The function that serves it"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "mime_type": {"type": "string", "description": "Empty: what the function returns"},
        "template": {"type": "boolean"},
    },
}
_INVOCATION = {
    "type": "object",
    "required": ["time", "request_id", "function", "outcome", "duration_ms", "principal"],
    "properties": {
        "time": {"type": "string", "format": "date-time", "description": "When the call started (UTC)"},
        "request_id": {"type": "string"},
        "function": {"type": "string", "description": "Qualified name"},
        "outcome": {
            "type": "string",
            "description": "ok, error, invalid_arguments, timeout, or the code of the error that stopped it",
        },
        "duration_ms": {"type": "number", "description": "End to end at the gateway"},
        "principal": {"type": "string", "description": "The name of the key that made the call"},
    },
}
_RELOAD_OUTCOME = {
    "type": "object",
    "required": ["runtime", "status"],
    "properties": {
        "runtime": {"type": "string"},
        "status": {"enum": ["reloaded", "failed"]},
        "error": {"type": "string", "description": "Why it failed; its old version keeps serving"},
        "traceback": {"type": "string", "description": "The failed import's traceback"},
    },
}
_ADMIN_PATHS: dict[str, Any] = {
    "/v1/admin/reload": {
        "post": {
            "summary": "Reload the runtimes' modules with no call failing (needs the @admin scope)",
            "description": (
                "Imports each runtime's modules again in a new template process, starts new pods from "
                "it, sends new calls to them and drains the old pods. A runtime given by an address has "
                "its catalog read again. A runtime whose modules fail to import keeps its old version "
                "serving: its outcome is `failed` with the error, and `ok` is false. The catalog, MCP "
                "listen streams (list_changed) and the router's index follow the change."
            ),
            "operationId": "reloadRuntimes",
            "requestBody": {
                "required": False,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "runtime": {"type": "string", "description": "Only this one (default: all)"}
                            },
                            "additionalProperties": False,
                        }
                    }
                },
            },
            "responses": {
                "200": json_body(
                    {
                        "type": "object",
                        "required": ["ok", "catalog_changed", "runtimes"],
                        "properties": {
                            "ok": {"type": "boolean"},
                            "catalog_changed": {"type": "boolean"},
                            "catalog_error": {"type": "string"},
                            "runtimes": {"type": "array", "items": _RELOAD_OUTCOME},
                        },
                    },
                    "Each runtime's outcome",
                ),
                **errors(400, 401, 403, 404, 413),
            },
        }
    }
}

_TRIGGER = {
    "type": "object",
    "required": ["name", "function", "paused"],
    "properties": {
        "name": {"type": "string"},
        "function": {"type": "string"},
        "schedule": {"type": "string", "description": "cron, with its time zone"},
        "every": {"type": "string"},
        "webhook": {"type": "string", "description": "its path"},
        "redis_stream": {"type": "string"},
        "paused": {"type": "boolean"},
        "next_run": {"type": ["number", "null"], "description": "A schedule's next tick (Unix time)"},
    },
}

OPERATION_PATHS: dict[str, Any] = {
    "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "Alive"}}}},
    "/readyz": {
        "get": {
            "summary": "Readiness of each runtime (200 while the gateway serves, unless asked otherwise)",
            "parameters": [
                {
                    "name": "runtime",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "Answer 503 unless this runtime is ready.",
                },
                {
                    "name": "strict",
                    "in": "query",
                    "required": False,
                    "schema": {"type": "boolean"},
                    "description": "Answer 503 unless every runtime is ready.",
                },
            ],
            "responses": {
                "200": {"description": "The gateway serves; the body says which runtimes are ready"},
                "503": {"description": "The runtime asked for (or, strict, any runtime) is not ready"},
                **errors(400, 404),
            },
        }
    },
    "/metrics": {
        "get": {
            "summary": "The gateway's Prometheus metrics (a key needs the @metrics scope)",
            "responses": {"200": {"description": "Metrics"}, **errors(401, 403)},
        }
    },
    "/v1/metrics/targets": {
        "get": {
            "summary": "Prometheus HTTP service discovery: the gateway and each live pod it runs",
            "responses": {
                "200": {
                    "description": "Target groups (`http_sd_configs`); pods carry runtime and pod labels",
                    "content": {"application/json": {"schema": {"type": "array", "items": TARGET_GROUP}}},
                },
                **errors(401, 403),
            },
        }
    },
    "/v1/metrics/pods/{runtime}/{pod}": {
        "get": {
            "summary": "One pod's Prometheus metrics, fetched from its Unix socket",
            "parameters": [
                {"name": "runtime", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "pod", "in": "path", "required": True, "schema": {"type": "string"}},
            ],
            "responses": {"200": {"description": "Metrics"}, **errors(401, 403, 404)},
        }
    },
    **_ADMIN_PATHS,
    "/v1/resources": {
        "get": {
            "summary": "The MCP resources and resource templates the caller may read",
            "operationId": "listResources",
            "responses": {
                "200": json_body(
                    {
                        "type": "object",
                        "required": ["resources"],
                        "properties": {"resources": {"type": "array", "items": _RESOURCE}},
                    },
                    "The resources",
                ),
                **errors(401, 429),
            },
        }
    },
    "/v1/resources/read": {
        "get": {
            "summary": "Read a resource: the result of the function serving its URI",
            "description": (
                "The function of the resource whose URI is `uri`, else of the first template that "
                "matches it, is called with the template's variables; the answer is its Result, as "
                "`POST /v1/functions/{name}/invoke` answers. 404 when no resource serves `uri`."
            ),
            "operationId": "readResource",
            "parameters": [{"name": "uri", "in": "query", "required": True, "schema": {"type": "string"}}],
            "responses": {
                "200": json_body(ref("Result"), "The function's result"),
                **errors(400, 401, 404, 429, 503, 504),
            },
        }
    },
    "/v1/invocations/recent": {
        "get": {
            "summary": "This gateway's last calls, newest first (the console's live view)",
            "description": (
                "Read-only, from memory: the last calls that reached a function of the catalog on "
                "this gateway replica. A key sees the calls it made; a key with the @admin scope (or "
                "an open gateway) sees every call."
            ),
            "operationId": "recentInvocations",
            "parameters": [
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "schema": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": CAPACITY,
                        "default": DEFAULT_LIMIT,
                    },
                }
            ],
            "responses": {
                "200": json_body(
                    {
                        "type": "object",
                        "required": ["invocations"],
                        "properties": {"invocations": {"type": "array", "items": _INVOCATION}},
                    },
                    "The calls, newest first",
                ),
                **errors(400, 401),
            },
        }
    },
    "/v1/admin/triggers": {
        "get": {
            "summary": "The [[triggers]]: source, paused, a schedule's next run (needs the @admin scope)",
            "operationId": "listTriggers",
            "responses": {
                "200": json_body(
                    {"type": "object", "properties": {"triggers": {"type": "array", "items": _TRIGGER}}},
                    "The triggers",
                ),
                **errors(401, 403, 404),
            },
        }
    },
    "/v1/admin/triggers/{name}/{action}": {
        "post": {
            "summary": "Pause or resume a trigger on every replica, or run a schedule now (needs @admin)",
            "operationId": "operateTrigger",
            "parameters": [
                {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
                {
                    "name": "action",
                    "in": "path",
                    "required": True,
                    "schema": {"enum": ["pause", "resume", "run"]},
                },
            ],
            "responses": {
                "200": json_body(_TRIGGER, "pause, resume: the trigger"),
                "202": json_body(ref("Job"), "run: the job it made"),
                **errors(400, 401, 403, 404, 503),
            },
        }
    },
}
