"""What the call-event channel (ctx.logger and ctx.report_progress reaching the caller) costs an MCP
tools/call, side by side with the code before it.

    .venv/bin/python bench/mcp_call_events.py [--base REV] [--requests N] [--rounds R]

Two `toolmesh up` gateways, each serving bench/noop_tools.py and bench/logging_tools.py with one
warm pod: `base` runs the source of git revision REV (default: where this branch left main),
exported with `git archive` to a temporary directory and run from there, `this` runs the working
tree. Each is driven by h2load over HTTP/1.1 one request at a time (c=1), POST /mcp
with a stateless tools/call:

    2026 noop          the 2026-07-28 envelope, no log level, no progress token: nothing asked
    2025 noop          the 2025 handshake era (MCP-Protocol-Version: 2025-11-25): on `this`, the
                       default level (info) applies, so the call carries a listener
    2026 noop, info    the 2026 envelope with _meta logLevel=info; noop takes no context, so the
                       pod builds no channel
    2026 ctx, info     the same to a function taking a context: the pod builds the channel
    2026 logs3, info   a function logging three info records: on `this` they are three
                       notifications/message before the result (an SSE answer); on `base` they
                       go to the pod's log only

Both gateways run at once; each call is measured on one then the other, the order alternating
from round to round; medians over the rounds are shown.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from gateway_invoke import BENCH, HOST, ROOT, Run, Target, _ready_line, h2load, started

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "accept: application/json, text/event-stream"
#: (key, label, protocol version, tool, log level or None)
CALLS = (
    ("noop_2026", "2026 noop", MODERN, "noop", None),
    ("noop_2025", "2025 noop", LEGACY, "noop", None),
    ("noop_info", "2026 noop, info", MODERN, "noop", "info"),
    ("ctx_info", "2026 ctx, info", MODERN, "noop_ctx", "info"),
    ("logs3_info", "2026 logs3, info", MODERN, "logs3", "info"),
)


def body(version: str, tool: str, level: str | None) -> bytes:
    params: dict[str, object] = {"name": tool, "arguments": {}}
    if version == MODERN:
        meta: dict[str, object] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        if level is not None:
            meta["io.modelcontextprotocol/logLevel"] = level
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


def headers(version: str, tool: str) -> list[str]:
    found = [ACCEPT, f"mcp-protocol-version: {version}"]
    if version == MODERN:
        found += ["mcp-method: tools/call", f"mcp-name: {tool}"]
    return found


def check_source(env: dict[str, str], cwd: Path) -> None:
    """Fail unless a Python started like the gateway imports toolmesh from `cwd` (`python -m` puts
    its working directory first on the path, before the editable install of this tree)."""
    command = [sys.executable, "-c", "import toolmesh; print(toolmesh.__file__)"]
    found = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=True).stdout
    if not Path(found.strip()).resolve().is_relative_to(cwd.resolve()):
        raise RuntimeError(f"a gateway started in {cwd} would run {found.strip()}")


def export(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


@contextlib.contextmanager
def gateway(name: str, source: Path | None, workdir: Path) -> Iterator[str]:
    """A `toolmesh up` running `source` (None: this tree) with one warm pod; yields its /mcp URL."""
    pythonpath = os.pathsep.join([*([str(source)] if source else []), str(BENCH)])
    config = workdir / f"{name}.toml"
    config.write_text(
        '[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[[runtimes]]\nname = "bench"\n'
        'modules = ["noop_tools", "logging_tools"]\n'
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{pythonpath}" }}\n'
    )
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    command = [sys.executable, "-m", "toolmesh", "up", "--config", str(config)]
    check_source(env, source or ROOT)
    # From `source`: `python -m` puts its working directory first on the path, so the base
    # gateway must not start in this tree.
    with started(command, env, workdir / f"{name}.err", cwd=source or ROOT) as process:
        yield f"http://{HOST}:{_ready_line(process)['http_port']}/mcp"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", help="the git revision to compare with (default: where HEAD left main)")
    parser.add_argument("--requests", type=int, default=1000, help="requests per measured run")
    parser.add_argument("--rounds", type=int, default=6, help="passes over every call (medians are shown)")
    args = parser.parse_args()
    if args.base is None:
        merge_base = ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"]
        args.base = subprocess.run(merge_base, capture_output=True, text=True, check=True).stdout.strip()[:12]
    results: dict[str, list[Run]] = {}
    with tempfile.TemporaryDirectory(prefix="tm-") as tmp:
        workdir = Path(tmp)
        base = export(args.base, Path(tempfile.mkdtemp(prefix="tm-base-", dir=tmp)))
        with gateway("base", base, workdir) as base_url, gateway("this", None, workdir) as this_url:
            urls = {"base": base_url, "this": this_url}
            for round_ in range(args.rounds):
                for key, _, version, tool, level in CALLS:
                    # Each call is measured on both gateways back to back, the order alternating,
                    # so the two see the same machine (which other work shares).
                    for name in ("base", "this") if round_ % 2 == 0 else ("this", "base"):
                        target = Target(
                            f"{name}_{key}", name, urls[name], body(version, tool, level), grpc=False
                        )
                        extra = headers(version, tool)
                        if round_ == 0:
                            h2load(target, max(args.requests // 5, 300), 1, workdir, extra)  # warm-up
                        results.setdefault(target.key, []).append(
                            h2load(target, args.requests, 1, workdir, extra)
                        )

    def median(key: str, pick: str) -> float:
        return float(statistics.median(getattr(run, pick) for run in results[key]))

    print(f"cpus {os.cpu_count()}, {args.requests} requests per run at c=1, median of {args.rounds} rounds")
    print(f"base = {args.base}, this = the working tree\n")
    print("| tools/call | base p50 µs | this p50 µs | this vs base | base p99 µs | this p99 µs |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, label, *_ in CALLS:
        b50, t50 = median(f"base_{key}", "p50_us"), median(f"this_{key}", "p50_us")
        b99, t99 = median(f"base_{key}", "p99_us"), median(f"this_{key}", "p99_us")
        print(f"| {label} | {b50:.0f} | {t50:.0f} | {100 * (t50 / b50 - 1):+.1f}% | {b99:.0f} | {t99:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
