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
    for key in ("schedule", "every", "webhook", "redis_stream"):
        if key in trigger:
            return f"{key} {trigger[key]}"
    return ""


def _triggers(args: argparse.Namespace) -> int:
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
            print(f"{trigger['name']:<24} {state:<7} {trigger['function']:<28} {_source(trigger)}{nxt}")
    elif args.action == "run":
        print(f"{document['id']} {document['status']}")
    else:
        print(f"{document['name']} {'paused' if document['paused'] else 'active'}")
    return 0


def add_trigger_commands(commands: Any, default_url: str) -> None:
    parser = commands.add_parser(
        "triggers",
        help="list, pause, resume or run a running gateway's triggers (a key with the @admin scope)",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    for action, helped in [
        ("list", "each trigger: paused or not, its function, its source, a schedule's next run"),
        ("pause", "stop firing it, on every replica (a webhook answers 503, a stream waits)"),
        ("resume", "fire it again"),
        ("run", "fire a schedule now, once (prints the job id)"),
    ]:
        sub = actions.add_parser(action, help=helped)
        if action != "list":
            sub.add_argument("name", help="the trigger's name")
        sub.add_argument(
            "--url", default=default_url, help="the gateway's HTTP address (default %(default)s)"
        )
        sub.add_argument("--api-key", help=f"API key for the gateway (default: ${API_KEY_ENV})")
        sub.add_argument("--json", action="store_true", help="print the gateway's answer as JSON")
        sub.set_defaults(handler=_triggers)
