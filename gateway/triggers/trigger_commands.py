"""`toolmesh triggers list | pause NAME | resume NAME | run NAME`: a running gateway's triggers,
through its HTTP API (`/v1/admin/triggers`, a key with the `@admin` scope). Only httpx is
needed, so the slim install runs them too."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

#: Where the API key comes from when --api-key is not given (as for `toolmesh invoke`).
API_KEY_ENV = "TOOLMESH_API_KEY"
PATH = "/v1/admin/triggers"


def _request(args: argparse.Namespace, method: str, path: str) -> tuple[int, Any]:
    import httpx

    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    headers = {"authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=30) as http:
        response = http.request(method, path)
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, {"error": {"message": response.text, "code": str(response.status_code)}}


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _source(trigger: dict[str, Any]) -> str:
    for key in ("schedule", "every", "webhook", "redis_stream", "nats_subject", "postgres_channel"):
        if key in trigger:
            return f"{key} {trigger[key]}"
    return ""


def run(args: argparse.Namespace) -> int:
    """One `toolmesh triggers` action (its arguments: toolmesh/cli.py, which imports this only
    when the command runs: a pod's CLI loads nothing of the gateway)."""
    import httpx

    path = PATH if args.action == "list" else f"{PATH}/{args.name}/{args.action}"
    try:
        status, document = _request(args, "GET" if args.action == "list" else "POST", path)
    except httpx.HTTPError as exc:
        print(f"toolmesh triggers: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 2
    if status >= 400:
        error = document.get("error", {}) if isinstance(document, dict) else {}
        print(
            f"toolmesh triggers: {error.get('message', status)} ({error.get('code', status)})",
            file=sys.stderr,
        )
        return 2
    if args.json:
        print(json.dumps(document, indent=2))
    elif args.action == "list":
        for trigger in document["triggers"]:
            state = "paused" if trigger["paused"] else "active"
            nxt = f"  next {_when(trigger['next_run'])}" if "next_run" in trigger else ""
            lag = f"  waiting {trigger['waiting']}" if "waiting" in trigger else ""
            print(f"{trigger['name']:<24} {state:<7} {trigger['function']:<28} {_source(trigger)}{nxt}{lag}")
    elif args.action == "run":
        print(f"{document['id']} {document['status']}")
    else:
        print(f"{document['name']} {'paused' if document['paused'] else 'active'}")
    return 0
