"""The `toolmesh` command.

    toolmesh up [--module MOD ... | --config FILE] [--data-dir DIR] [--host H] [--http-port P] [--grpc-port P]
                [--reload]
    toolmesh runtime --module MOD [--module MOD ...] [--host H] [--port P] [--metrics-port P]
    toolmesh functions (--module MOD [--module MOD ...] | --url URL | --config FILE)
                       [--format json|openai|text] [--strict]
    toolmesh invoke NAME [--args JSON] [--url URL] [--api-key KEY]
    toolmesh tools [--format openai|responses|cloudflare|mcp] [--strict] [--url URL] [--api-key KEY]
    toolmesh hash-key [KEY]
    toolmesh triggers list | pause NAME | resume NAME | run NAME [--url URL] [--api-key KEY] [--json]
    toolmesh deploy render [--config FILE] [--image IMAGE] [--namespace NS] [--output DIR]
    toolmesh router build | eval ...   (see toolmesh/commands/router_commands.py)

Imports happen inside each command so that starting a pod loads only what a pod needs, and
so that the commands of the slim install (functions, invoke, tools, runtime, hash-key) run
without the `mesh` extra; the others say in one line that they need it (toolmesh/extras.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolmesh.client.http import Client
    from toolmesh.config import MeshConfig
    from toolmesh.errors import ToolmeshError
    from toolmesh.runtimes.functions.spec import FunctionSpec

#: Where the API key for `invoke`, `tools` and `functions --url` comes from when --api-key is not given.
API_KEY_ENV = "TOOLMESH_API_KEY"


def _runtime(args: argparse.Namespace) -> int:
    from toolmesh.errors import DefinitionError
    from toolmesh.logs import lines as logs
    from toolmesh.protocol.pod_env import POD_TOKEN_ENV, read_environment
    from toolmesh.runtimes.pod.pod_process import MemoryLimitTooLow
    from toolmesh.runtimes.pod.serving import Unprotected, run
    from toolmesh.runtimes.pod.settings import PodSettings
    from toolmesh.runtimes.pod.template import UnsafeSocketDirectory, run_template

    environment = read_environment(os.environ)
    settings = PodSettings.from_arguments(args, environment)
    # The pod holds its token now; the functions' subprocesses need not inherit it.
    os.environ.pop(POD_TOKEN_ENV, None)
    logs.configure(settings.log_level, environment.log_format)
    try:
        return run_template(settings) if settings.template else run(settings)
    except (DefinitionError, MemoryLimitTooLow, Unprotected, UnsafeSocketDirectory) as exc:
        print(f"toolmesh runtime: {exc}", file=sys.stderr)
        return 2


def _up_config(args: argparse.Namespace) -> MeshConfig:
    """What `toolmesh up` serves: the --module list as one runtime, else --config, else
    ./toolmesh.toml, else the examples; with --data-dir as the project's data directory."""
    from pathlib import Path

    from toolmesh.config import ConfigError, load_config
    from toolmesh.config.config_sources import CONFIG_FILE, find_config, modules_config

    if args.module:
        if args.config is not None:
            raise ConfigError("give --module or --config, not both (a config lists its runtimes' modules)")
        config = modules_config(args.module, Path.cwd())
    else:
        path = find_config(args.config)
        config = load_config(path)
        if path is None and config.directory is None and not Path("examples", "weather.py").is_file():
            raise ConfigError(
                f"nothing to serve: give --module MOD (a module in this directory) or --config FILE, or "
                f"run it beside a {CONFIG_FILE} (the examples/ default needs a source checkout)"
            )
    if args.data_dir is not None:
        data_dir = Path(args.data_dir).expanduser().resolve()
        config = config.model_copy(
            update={"project": config.project.model_copy(update={"data_dir": data_dir})}
        )
    return config


def _up(args: argparse.Namespace) -> int:
    import asyncio

    from toolmesh.config import ConfigError
    from toolmesh.errors import ToolmeshError
    from toolmesh.gateway.server import serve
    from toolmesh.logs import lines as logs
    from toolmesh.protocol.pod_env import LOG_FORMAT_ENV

    # A person at a terminal reads text and a banner; anything else (a pipe, a log collector) JSON.
    text = args.log_format == "text" or (args.log_format == "auto" and sys.stderr.isatty())
    os.environ[LOG_FORMAT_ENV] = "text" if text else "json"  # the pods inherit it
    logs.configure(args.log_level, os.environ[LOG_FORMAT_ENV])
    try:
        config = _up_config(args)
    except ConfigError as exc:
        print(f"toolmesh up: {exc}", file=sys.stderr)
        return 2
    overrides = {
        key: value
        for key, value in (("host", args.host), ("http_port", args.http_port), ("grpc_port", args.grpc_port))
        if value is not None
    }
    if overrides:
        config = config.model_copy(update={"gateway": config.gateway.model_copy(update=overrides)})
    try:
        import uvloop

        run: Any = uvloop.run
    except ImportError:
        run = asyncio.run
    try:
        from toolmesh.config.config_sources import find_config

        file = None if args.module else find_config(args.config)
        banner = text and sys.stdout.isatty()
        code: int = run(
            serve(config, watch=args.reload, banner=banner, file=None if file is None else str(file))
        )
    except (ConfigError, OSError, ToolmeshError) as exc:
        print(f"toolmesh up: {exc}", file=sys.stderr)
        return 2
    return code


def _hash_key(args: argparse.Namespace) -> int:
    import getpass

    from toolmesh.config import hash_key

    try:
        # A pipe (`echo $KEY | toolmesh hash-key`) is read as it is; a terminal is asked, unechoed.
        key = args.key or (getpass.getpass("API key: ") if sys.stdin.isatty() else sys.stdin.readline())
    except (EOFError, KeyboardInterrupt):
        key = ""
    key = key.strip()
    if not key:
        print("toolmesh hash-key: no key given: pass it as an argument, pipe it or type it", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


def _deploy_render(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolmesh.config import ConfigError, load_config
    from toolmesh.config.config_sources import find_config
    from toolmesh.deploy.loopback_urls import loopback_warnings
    from toolmesh.deploy.render import RenderOptions, render, stream, write

    options = RenderOptions(
        image=args.image,
        namespace=args.namespace,
        cluster_domain=args.cluster_domain,
        prometheus_url=args.prometheus_url,
        profile=args.profile,
        redis=args.redis,
        data_claim=args.data_claim,
    )
    path = find_config(args.config)
    try:
        config = load_config(path)
        files = render(config, options)
    except ConfigError as exc:
        print(f"toolmesh deploy render: {exc}", file=sys.stderr)
        return 2
    for warning in loopback_warnings(config):
        print(f"toolmesh deploy render: warning: {warning}", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(stream(files))
        return 0
    written = write(files, Path(args.output), source=str(path or "the default config (examples/)"))
    print(f"wrote {len(written)} files to {args.output}; apply with: kubectl apply -k {args.output}")
    return 0


def _client(args: argparse.Namespace) -> Client:
    """A client for the gateway at --url; the API key's environment variable is read here, once."""
    from toolmesh.client.http import Client

    api_key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    return Client(args.url, api_key=api_key)


def _refused(command: str, error: ToolmeshError) -> int:
    """Report a call the gateway refused, or could not be sent, in one line (then one per violation)."""
    print(f"toolmesh {command}: {error.message} ({error.code})", file=sys.stderr)
    for violation in getattr(error, "violations", ()):
        print(f"  - {violation.message}", file=sys.stderr)
    return 2


def _print_specs(specs: Sequence[FunctionSpec], fmt: str, strict: bool) -> None:
    from toolmesh.gateway.core.tool_formats import openai_tool
    from toolmesh.runtimes.functions.spec import render_functions, spec_to_dict

    if fmt == "text":
        print(render_functions(specs))
        return
    if fmt == "openai":
        document: object = [openai_tool(s, strict=strict) for s in specs]
    else:
        document = {"functions": [spec_to_dict(s) for s in specs]}
    print(json.dumps(document, indent=2))


def _functions(args: argparse.Namespace) -> int:
    from toolmesh.errors import DefinitionError, ToolmeshError
    from toolmesh.runtimes.functions.registry import Registry

    if args.config is not None:
        from toolmesh.gateway.listing.runtime_listing import print_listing

        return print_listing(args.config, args.format, args.strict, os.environ)
    if args.url is not None:
        try:
            with _client(args) as client:
                specs = client.list_functions()
        except ToolmeshError as exc:
            return _refused("functions", exc)
        _print_specs(specs, args.format, args.strict)
        return 0
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        registry = Registry.from_modules(args.module)
    except DefinitionError as exc:
        print(f"toolmesh functions: {exc}", file=sys.stderr)
        return 2
    specs = registry.specs()
    if args.format != "json":
        # Resources, prompts and completions are not tools; the JSON (a remote runtime's catalog) keeps them.
        specs = [spec for spec in specs if spec.feature is None]
    _print_specs(specs, args.format, args.strict)
    return 0


def _invoke(args: argparse.Namespace) -> int:
    from toolmesh.errors import ToolmeshError
    from toolmesh.gateway.core.result_json import result_json

    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        print(f"toolmesh invoke: --args is not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print(f"toolmesh invoke: --args must be a JSON object, got {args.args!r}", file=sys.stderr)
        return 2
    try:
        with _client(args) as client:
            result = client.invoke(args.name, arguments)
    except ToolmeshError as exc:
        return _refused("invoke", exc)
    # The gateway's own serialiser, so this prints exactly what POST .../invoke answers.
    print(json.dumps(json.loads(result_json(result)), indent=2, ensure_ascii=False))
    return 1 if result.is_error else 0


def _tools(args: argparse.Namespace) -> int:
    from toolmesh.errors import ToolmeshError

    try:
        with _client(args) as client:
            tools = client.tools(args.format, strict=args.strict)
    except ToolmeshError as exc:
        return _refused("tools", exc)
    print(json.dumps(tools, indent=2))
    return 0


def _add_client_options(parser: argparse.ArgumentParser, default_url: str | None) -> None:
    if default_url is not None:
        parser.add_argument(
            "--url", default=default_url, help="the gateway's HTTP address (default %(default)s)"
        )
    parser.add_argument("--api-key", help=f"API key for the gateway (default: ${API_KEY_ENV})")


def _add_deploy_parser(commands: Any) -> None:
    from toolmesh.deploy.names import (
        DEFAULT_CLUSTER_DOMAIN,
        DEFAULT_IMAGE,
        DEFAULT_NAMESPACE,
        DEFAULT_PROMETHEUS_URL,
        PROFILES,
    )
    from toolmesh.extras import RENDER_MODULES, needs_mesh

    deploy = commands.add_parser("deploy", help="run the mesh on Kubernetes")
    actions = deploy.add_subparsers(dest="deploy_command", required=True, metavar="ACTION")
    render = actions.add_parser(
        "render",
        help="write Kubernetes manifests for the runtimes in a config",
        description="Write the gateway's and each runtime's Kubernetes objects (a kustomization "
        "with --output, else one YAML stream on stdout) for the runtimes in a toolmesh.toml.",
    )
    render.add_argument(
        "--config", "-c", help="toolmesh.toml (default: ./toolmesh.toml if there is one, else examples/)"
    )
    render.add_argument("--image", default=DEFAULT_IMAGE, help="the toolmesh image (default %(default)s)")
    render.add_argument("--namespace", "-n", default=DEFAULT_NAMESPACE, help="default %(default)s")
    render.add_argument("--output", "-o", help="directory to write (default: print to stdout)")
    render.add_argument(
        "--profile",
        choices=PROFILES,
        default="prod",
        help="prod: KEDA scale-to-zero, HPA, PDBs, NetworkPolicies, monitors; dev: one replica each "
        "(default %(default)s)",
    )
    render.add_argument(
        "--redis",
        action="store_true",
        help="add a Redis StatefulSet for the gateway replicas' shared state ([state]); without it, "
        "give an external one in the toolmesh-state Secret or [state] url",
    )
    render.add_argument(
        "--data-claim",
        metavar="CLAIM",
        help="a PersistentVolumeClaim for the gateway's files (router sessions, SQLite jobs), kept "
        "across restarts (default: an emptyDir, lost with the pod)",
    )
    render.add_argument("--cluster-domain", default=DEFAULT_CLUSTER_DOMAIN, help="default %(default)s")
    render.add_argument(
        "--prometheus-url", default=DEFAULT_PROMETHEUS_URL, help="KEDA's Prometheus (default %(default)s)"
    )
    render.set_defaults(handler=_deploy_render)
    needs_mesh(render, RENDER_MODULES)


def build_parser() -> argparse.ArgumentParser:
    from toolmesh.config.config_defaults import DEFAULT_HOST as GATEWAY_HOST
    from toolmesh.config.config_defaults import DEFAULT_HTTP_PORT
    from toolmesh.extras import needs_mesh
    from toolmesh.runtimes.pod.settings import add_arguments as add_runtime_arguments

    default_url = f"http://{GATEWAY_HOST}:{DEFAULT_HTTP_PORT}"

    parser = argparse.ArgumentParser(prog="toolmesh", description="A serverless function-calling mesh.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = commands.add_parser(
        "up",
        help="start the gateway and its runtimes: your modules, or a toolmesh.toml",
        description="Start the gateway (HTTP and gRPC) and the runtimes it serves: the --module "
        "list, else the --config file, else ./toolmesh.toml when there is one, else examples/ "
        "(in a source checkout). Needs the mesh extra: pip install 'toolmesh[mesh]'.",
    )
    up.add_argument(
        "--module",
        "-m",
        action="append",
        metavar="MOD",
        help="serve this module, importable from the current directory (repeatable); the modules "
        "form one runtime named after the first (my_tools: 'my-tools'). No toolmesh.toml is read",
    )
    up.add_argument(
        "--config",
        "-c",
        help="toolmesh.toml; its modules and relative paths are found beside it "
        "(default: ./toolmesh.toml if there is one, else every module in examples/)",
    )
    up.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the project's data directory: its jobs, router sessions, learned examples and function "
        "state (overrides [project] data_dir; default: .toolmesh/ in the config's directory, or with "
        "--module in the current one). [jobs] path and [router] data_dir, when set, still win",
    )
    up.add_argument("--host", help="address to bind (overrides [gateway] host)")
    up.add_argument("--http-port", type=int, help="HTTP port (overrides [gateway] http_port, default 8080)")
    up.add_argument("--grpc-port", type=int, help="gRPC port (overrides [gateway] grpc_port, default 50051)")
    up.add_argument(
        "--reload",
        action="store_true",
        help="reload a runtime when its modules change (its files under the config's directory), with "
        "no call failing; a module that fails to import keeps the old version serving. SIGHUP "
        "reloads every runtime, with or without this",
    )
    up.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    up.add_argument(
        "--log-format",
        default="auto",
        choices=["auto", "json", "text"],
        help="auto (the default): readable lines and a banner on a terminal, JSON lines otherwise",
    )
    up.set_defaults(handler=_up)
    needs_mesh(up)

    hashing = commands.add_parser("hash-key", help="print the key_hash form of an API key for toolmesh.toml")
    hashing.add_argument("key", nargs="?", help="the key (prompted for when omitted)")
    hashing.set_defaults(handler=_hash_key)

    _add_deploy_parser(commands)

    runtime = commands.add_parser("runtime", help="serve the functions of Python modules as a runtime pod")
    add_runtime_arguments(runtime)
    runtime.set_defaults(handler=_runtime)

    functions = commands.add_parser(
        "functions", help="print the functions a module offers (without serving) or a gateway serves"
    )
    source = functions.add_mutually_exclusive_group(required=True)
    source.add_argument("--module", "-m", action="append", help="module to inspect (repeatable)")
    source.add_argument("--url", help=f"a running gateway to ask instead, e.g. {default_url}")
    source.add_argument(
        "--config", help="a toolmesh.toml: list what each of its runtimes brings, serving nothing"
    )
    functions.add_argument("--format", choices=["json", "openai", "text"], default="json")
    functions.add_argument(
        "--strict", action="store_true", help="OpenAI strict-mode schemas (with --format openai)"
    )
    _add_client_options(functions, default_url=None)
    functions.set_defaults(handler=_functions)

    invoke = commands.add_parser(
        "invoke",
        help="call a function on a running gateway and print its result",
        epilog="exit status: 0 on success, 1 when the function failed (is_error), "
        "2 when the gateway refused the call or could not be reached",
    )
    invoke.add_argument("name", help='the function, e.g. "get_forecast" or "arithmetic.add"')
    invoke.add_argument("--args", default="{}", help="the arguments as a JSON object (default %(default)s)")
    _add_client_options(invoke, default_url)
    invoke.set_defaults(handler=_invoke)

    tools = commands.add_parser("tools", help="print a running gateway's functions as LLM tool definitions")
    tools.add_argument("--format", choices=["openai", "responses", "cloudflare", "mcp"], default="openai")
    tools.add_argument(
        "--strict", action="store_true", help="OpenAI strict-mode schemas (the OpenAI formats)"
    )
    _add_client_options(tools, default_url)
    tools.set_defaults(handler=_tools)

    from toolmesh.commands.router_commands import add_router_commands

    _add_trigger_commands(commands, default_url)
    add_router_commands(commands)
    return parser


def _triggers(args: argparse.Namespace) -> int:
    from toolmesh.gateway.triggers.trigger_commands import run

    return run(args)


def _add_trigger_commands(commands: Any, default_url: str) -> None:
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
        _add_client_options(sub, default_url)
        sub.add_argument("--json", action="store_true", help="print the gateway's answer as JSON")
        sub.set_defaults(handler=_triggers)


def main(argv: Sequence[str] | None = None) -> int:
    from toolmesh.extras import mesh_refusal
    from toolmesh.grpc_verbosity import quiet_grpc

    # Before any command imports grpc, whose C core reads it then (see grpc_verbosity.py).
    quiet_grpc(os.environ)
    args = build_parser().parse_args(argv)
    refusal = mesh_refusal(args)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
