"""`toolmesh router ...`: build the model ahead of time, and evaluate routing on a query set.

toolmesh router build [--config FILE] [--cache-dir DIR]
toolmesh router eval --catalog POOL.json --queries QUERIES.jsonl [--k 5] [--match id|name] [--json]
                     [--examples-from TRAIN.jsonl --k-examples N]
toolmesh router examples list [--function NAME] [--json]      examples learned from use
toolmesh router examples remove NAME [--prompt TEXT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def _config(args: argparse.Namespace) -> Any:
    from toolmesh.config import load_config
    from toolmesh.config.config_sources import find_config

    router = load_config(find_config(args.config)).router
    if args.cache_dir is not None:
        router = router.model_copy(update={"cache_dir": Path(args.cache_dir)})
    if getattr(args, "fp32", False):
        router = router.model_copy(update={"quantized": False})
    return router


def _progress(step: str) -> None:
    print(f"toolmesh router: {step}", file=sys.stderr, flush=True)


def _build(args: argparse.Namespace) -> int:
    from toolmesh.config import ConfigError
    from toolmesh.router.embedding.model import ModelUnavailable, ensure_model

    try:
        config = _config(args)
        started = time.perf_counter()
        model = ensure_model(config.cache_dir, progress=_progress)
    except (ConfigError, ModelUnavailable, OSError) as exc:
        print(f"toolmesh router build: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"directory": str(model.directory), "seconds": round(time.perf_counter() - started, 2)}))
    return 0


def _eval(args: argparse.Namespace) -> int:
    from toolmesh.config import ConfigError
    from toolmesh.router.embedding.model import ModelUnavailable
    from toolmesh.router.evaluate import EvalInputError, evaluate, load_pool, load_queries, with_examples
    from toolmesh.router.service import open_embedder

    try:
        pool = load_pool(Path(args.catalog))
        queries = load_queries(Path(args.queries))
        if args.examples_from is not None:
            if args.k_examples < 0:
                raise ValueError("--k-examples must be 0 or more")
            pool = with_examples(pool, load_queries(Path(args.examples_from)), args.k_examples)
        config = _config(args)
        embedder = open_embedder(config, progress=_progress)
    except (ConfigError, EvalInputError, ModelUnavailable, OSError, ValueError) as exc:
        print(f"toolmesh router eval: {exc}", file=sys.stderr)
        return 2
    report = evaluate(embedder, pool, queries, k=args.k, match=args.match, threshold=config.threshold)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.table())
    return 0


def _examples(args: argparse.Namespace) -> int:
    from toolmesh.config import ConfigError
    from toolmesh.errors import StateUnavailable

    try:
        found = _learned(args)
    except (ConfigError, OSError, StateUnavailable) as exc:
        print(f"toolmesh router examples: {exc}", file=sys.stderr)
        return 2
    if isinstance(found, int):
        print(json.dumps({"function": args.function, "removed": found}))
        return 0 if found else 1
    if args.json:
        print(json.dumps([{**vars_of(row)} for row in found], indent=2))
    else:
        for row in found:
            stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row.at))
            print(f"{row.function}\t{row.version[:8]}\t{stamp}\t{row.principal}\t{row.prompt}")
    return 0


def _learned(args: argparse.Namespace) -> Any:
    """What `remove` removed (a count) or what `list` lists, in the gateway's learned examples:
    in the shared state's Redis when the config (or TOOLMESH_STATE_URL) names one; else in SQLite
    under the router's data directory. Either way running gateways follow a removal at once (Redis
    announces it; SQLite's change log is read before each route)."""
    import asyncio
    import os

    from toolmesh.config import load_config, settled_value
    from toolmesh.config.config_sources import find_config
    from toolmesh.gateway.environment import state_url
    from toolmesh.router.learning import LearnedExamples
    from toolmesh.router.service import LEARNED_FILE

    config = load_config(find_config(args.config))
    removing = args.examples_command == "remove"
    url = None if args.data_dir else state_url(config, os.environ)
    if url is not None:
        from toolmesh.gateway.state.redis_client import Outage, connect
        from toolmesh.gateway.state.redis_learning import RedisExamples

        async def in_redis() -> Any:
            client = connect(url, config.state.timeout)
            try:
                store = RedisExamples(client, config.state.key_prefix, Outage(url))
                if removing:
                    return await store.aremove(args.function, args.prompt)
                return await store.alisting(args.function)
            finally:
                await client.aclose()

        return asyncio.run(in_redis())
    data = (
        Path(args.data_dir)
        if args.data_dir
        else settled_value(config.settled().router.data_dir, "[router] data_dir")
    )
    local = LearnedExamples(data / LEARNED_FILE)
    try:
        return local.remove(args.function, args.prompt) if removing else local.listing(args.function)
    finally:
        local.close()


def vars_of(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in ("function", "version", "prompt", "principal", "at")}


def add_router_commands(commands: Any) -> None:
    """Register `toolmesh router` and its subcommands on the CLI's subparsers."""
    from toolmesh.extras import ROUTER_MODULES, needs_mesh

    router = commands.add_parser("router", help="the embedding router: build its model, evaluate it")
    sub = router.add_subparsers(dest="router_command", required=True, metavar="COMMAND")

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--config",
            "-c",
            help="toolmesh.toml whose [router] section to use (default: ./toolmesh.toml if there is one)",
        )
        parser.add_argument("--cache-dir", help="where built models are kept (overrides [router] cache_dir)")

    build = sub.add_parser(
        "build", help="build the ONNX model into the cache now (start-up then only loads it)"
    )
    common(build)
    build.set_defaults(handler=_build)
    needs_mesh(build, ROUTER_MODULES)

    evaluation = sub.add_parser(
        "eval", help="recall@1/@k, MRR and latency of routing a query set over a pool"
    )
    evaluation.add_argument(
        "--catalog", required=True, help="pool JSON: {'functions': [{pool_id, name, ...}]}"
    )
    evaluation.add_argument("--queries", required=True, help="JSON lines: {prompt, expected_pool_id, ...}")
    evaluation.add_argument("--k", type=int, default=5, help="cut-off for recall@k (default %(default)s)")
    evaluation.add_argument(
        "--match",
        choices=["id", "name"],
        default="id",
        help="id: only the expected pool entry counts; name: any entry in same_name_pool_ids",
    )
    evaluation.add_argument(
        "--examples-from",
        help="JSON lines in the queries' format: their prompts become examples of their expected function",
    )
    evaluation.add_argument(
        "--k-examples",
        type=int,
        default=10,
        help="at most this many examples per function from --examples-from (default %(default)s)",
    )
    evaluation.add_argument("--fp32", action="store_true", help="use the fp32 model instead of the int8 one")
    evaluation.add_argument("--json", action="store_true", help="print the report as JSON")
    common(evaluation)
    evaluation.set_defaults(handler=_eval)
    needs_mesh(evaluation, ROUTER_MODULES)

    examples = sub.add_parser(
        "examples",
        help="list or remove the examples the router learned from use (in [state]'s Redis when "
        "one is configured, else in SQLite in the project's data directory: [router] data_dir, else "
        "[project] data_dir, else .toolmesh/ beside the config); running gateways follow a "
        "removal from their next route",
    )
    actions = examples.add_subparsers(dest="examples_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="learned examples, newest first per function")
    listing.add_argument("--function", help="only this function (qualified name)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    removal = actions.add_parser("remove", help="forget a function's learned examples (or one of them)")
    removal.add_argument("function", help="qualified function name")
    removal.add_argument("--prompt", help="only this prompt (exactly as listed)")
    for action in (listing, removal):
        common(action)
        action.add_argument(
            "--data-dir",
            help="the data directory the gateway was given (toolmesh up --data-dir; overrides "
            "[router] data_dir and [state])",
        )
        action.set_defaults(handler=_examples)
