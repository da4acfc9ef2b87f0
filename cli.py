"""The `toolmesh` command.

    toolmesh runtime --module MOD [--module MOD ...] [--host H] [--port P] [--metrics-port P]
    toolmesh functions --module MOD [--format json|openai|text] [--strict]

Imports happen inside each command so that starting a pod loads only what a pod needs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence


def _runtime(args: argparse.Namespace) -> int:
    from toolmesh.errors import DefinitionError
    from toolmesh.runtimes import logs
    from toolmesh.runtimes.executor import ExecutorConfig
    from toolmesh.runtimes.pod import PodConfig, run

    logs.configure(args.log_level)
    config = PodConfig(
        modules=args.module,
        host=args.host,
        port=args.port,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        drain_grace=args.drain_grace,
        executor=ExecutorConfig(
            default_timeout=args.timeout,
            max_inflight=args.max_inflight,
            workers=args.workers,
            debug=args.debug,
        ),
    )
    try:
        return run(config)
    except DefinitionError as exc:
        print(f"toolmesh runtime: {exc}", file=sys.stderr)
        return 2


def _functions(args: argparse.Namespace) -> int:
    from toolmesh.errors import DefinitionError
    from toolmesh.runtimes.formats import openai_tool, spec_to_dict
    from toolmesh.runtimes.registry import Registry
    from toolmesh.runtimes.render import render_functions

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        registry = Registry.from_modules(args.module)
    except DefinitionError as exc:
        print(f"toolmesh functions: {exc}", file=sys.stderr)
        return 2
    specs = registry.specs()
    if args.format == "text":
        print(render_functions(specs))
        return 0
    if args.format == "openai":
        document: object = [openai_tool(s, strict=args.strict) for s in specs]
    else:
        document = {"functions": [spec_to_dict(s) for s in specs]}
    print(json.dumps(document, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from toolmesh.runtimes.executor import DEFAULT_MAX_INFLIGHT, DEFAULT_TIMEOUT, DEFAULT_WORKERS
    from toolmesh.runtimes.pod import DEFAULT_DRAIN_GRACE, DEFAULT_HOST, DEFAULT_METRICS_PORT, DEFAULT_PORT

    parser = argparse.ArgumentParser(prog="toolmesh", description="A serverless function-calling mesh.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    runtime = commands.add_parser("runtime", help="serve the functions of Python modules as a runtime pod")
    runtime.add_argument(
        "--module", "-m", action="append", required=True, help="module to serve (repeatable)"
    )
    runtime.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)")
    runtime.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="gRPC port, 0 for any (default %(default)s)"
    )
    runtime.add_argument(
        "--metrics-port",
        type=int,
        default=DEFAULT_METRICS_PORT,
        help="Prometheus /metrics port, 0 for any, -1 for none (default %(default)s)",
    )
    runtime.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds a call may run when its function sets no timeout (default %(default)s)",
    )
    runtime.add_argument(
        "--max-inflight",
        type=int,
        default=DEFAULT_MAX_INFLIGHT,
        help="calls at once before RESOURCE_EXHAUSTED (default %(default)s)",
    )
    runtime.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="threads for sync functions (default %(default)s)",
    )
    runtime.add_argument(
        "--drain-grace",
        type=float,
        default=DEFAULT_DRAIN_GRACE,
        help="seconds in-flight calls get after SIGTERM (default %(default)s)",
    )
    runtime.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="'warning' silences the per-call log lines (default %(default)s)",
    )
    runtime.add_argument("--debug", action="store_true", help="include tracebacks in error results")
    runtime.set_defaults(handler=_runtime)

    functions = commands.add_parser("functions", help="print the functions a module offers, without serving")
    functions.add_argument(
        "--module", "-m", action="append", required=True, help="module to inspect (repeatable)"
    )
    functions.add_argument("--format", choices=["json", "openai", "text"], default="json")
    functions.add_argument(
        "--strict", action="store_true", help="OpenAI strict-mode schemas (with --format openai)"
    )
    functions.set_defaults(handler=_functions)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
