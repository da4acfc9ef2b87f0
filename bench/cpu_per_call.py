"""CPU time each front door spends per no-op call, each beside its plain baseline, in one run.

    .venv/bin/python bench/cpu_per_call.py [--requests N] [--clients C] [--json]

CPU time (user + system, from /proc) of the serving process, not wall time: far less sensitive
to a noisy shared machine than throughput. Loads are driven by h2load (its own process; its CPU
is not counted): HTTP/1.1 with C connections for the HTTP doors, one HTTP/2 connection with C
streams in flight for gRPC (as a grpc channel would use).

    door                                   baseline
    HTTP  POST /v1/functions/noop/invoke   plain Starlette route (bench/plain_starlette.py)
    MCP   tools/call, 2025-11-25 (stateless POST)          HTTP invoke
    MCP   tools/call, 2026-07-28 (per-request envelope)    HTTP invoke
    MCP   tools/list, both revisions          HTTP invoke, and the same list through the SDK's
                                              machinery (an inert `_meta` key the fast path leaves)
    gRPC  toolmesh.v1.Mesh/Invoke           plain grpc.aio servicer (bench/plain_grpc.py), and HTTP invoke
    OpenAI POST /v1/tool_calls (one call)   HTTP invoke

The pod's CPU is shown apart: it is the same for every door. Targets (issue #31): HTTP invoke
<= 2.0x plain Starlette, MCP tools/call <= 1.5x HTTP invoke, gRPC Invoke <= 1.5x HTTP invoke.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolmesh.v1 import invoke_pb2

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
HOST = "127.0.0.1"
JSON_HEADERS = ("content-type: application/json",)
MCP_ACCEPT = "accept: application/json, text/event-stream"
GRPC_HEADERS = ("content-type: application/grpc", "te: trailers")


@dataclass(frozen=True)
class Load:
    key: str
    label: str
    url: str
    body: bytes
    headers: Sequence[str]
    grpc: bool = False


@dataclass(frozen=True)
class Measured:
    gateway_us: float
    pods_us: float
    rps: float


def mcp_body(revision: str, method: str = "tools/call", sdk: bool = False) -> bytes:
    """The request; with `sdk`, an inert `_meta` key the fast path leaves to the SDK's machinery."""
    params: dict[str, object] = {"name": "noop", "arguments": {}} if method == "tools/call" else {}
    meta: dict[str, object] = {}
    if revision == "2026-07-28":
        meta = {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    if sdk:
        meta["org.example/bench"] = True
    if meta:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def mcp_headers(revision: str, method: str = "tools/call") -> tuple[str, ...]:
    headers = (*JSON_HEADERS, MCP_ACCEPT, f"mcp-protocol-version: {revision}")
    if revision == "2026-07-28":
        named = ("mcp-name: noop",) if method == "tools/call" else ()
        return (*headers, f"mcp-method: {method}", *named)
    return headers


def grpc_frame(function: str) -> bytes:
    message = invoke_pb2.InvokeRequest(function=function, arguments=b"{}").SerializeToString()
    return b"\x00" + len(message).to_bytes(4, "big") + message


def cpu_seconds(pids: Sequence[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):
                for child in (task / "children").read_text().split():
                    found += [int(child), *descendants(int(child))]
    return found


def h2load(load: Load, requests: int, clients: int, workdir: Path) -> tuple[int, float]:
    """Runs `requests` calls; answers (how many succeeded, requests per second)."""
    body = workdir / f"{load.key}.body"
    body.write_bytes(load.body)
    command = [shutil.which("h2load") or "h2load", "-n", str(requests), "-t", "1", "-d", str(body)]
    command += ["-c", "1", "-m", str(clients)] if load.grpc else ["--h1", "-c", str(clients)]
    for header in load.headers:
        command += ["-H", header]
    out = subprocess.run([*command, load.url], capture_output=True, text=True, timeout=600).stdout
    succeeded = re.search(r"(\d+) succeeded", out)
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    status = re.search(r"status codes: (\d+) 2xx", out)
    ok = int(succeeded.group(1)) if succeeded else 0
    if status is None or int(status.group(1)) != requests or ok != requests:
        raise RuntimeError(f"{load.label}: not every request succeeded:\n{out}")
    return ok, float(rate.group(1)) if rate else 0.0


def measure(load: Load, pid: int, requests: int, clients: int, workdir: Path) -> Measured:
    h2load(load, max(requests // 10, 500), clients, workdir)  # warm-up
    pods = descendants(pid)
    gateway0, pods0 = cpu_seconds([pid]), cpu_seconds(pods)
    ok, rps = h2load(load, requests, clients, workdir)
    gateway1, pods1 = cpu_seconds([pid]), cpu_seconds(pods)
    return Measured(1e6 * (gateway1 - gateway0) / ok, 1e6 * (pods1 - pods0) / ok, rps)


@contextlib.contextmanager
def started(
    command: list[str], env: dict[str, str], stderr: Path, cwd: Path = ROOT
) -> Iterator[tuple[int, dict[str, int]]]:
    """`command` running in `cwd`, with its pid and the ports it prints on its first line."""
    with stderr.open("w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=cwd)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"{command!r} exited before it was ready; see {stderr}")
            yield process.pid, json.loads(line)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def gateway_loads(http: str, grpc_port: int) -> list[Load]:
    tool_call = {
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "noop", "arguments": "{}"}}]
    }
    return [
        Load("http", "HTTP invoke", f"{http}/v1/functions/noop/invoke", b"{}", JSON_HEADERS),
        *(
            Load(f"mcp_{rev}", f"MCP tools/call {rev}", f"{http}/mcp", mcp_body(rev), mcp_headers(rev))
            for rev in ("2025-11-25", "2026-07-28")
        ),
        *(
            Load(
                f"list{'_sdk' if sdk else ''}_{rev}",
                f"MCP tools/list {rev}{' (SDK)' if sdk else ''}",
                f"{http}/mcp",
                mcp_body(rev, "tools/list", sdk),
                mcp_headers(rev, "tools/list"),
            )
            for rev in ("2025-11-25", "2026-07-28")
            for sdk in (False, True)
        ),
        Load(
            "grpc",
            "gRPC Mesh/Invoke",
            f"http://{HOST}:{grpc_port}/toolmesh.v1.Mesh/Invoke",
            grpc_frame("noop"),
            GRPC_HEADERS,
            grpc=True,
        ),
        Load(
            "openai",
            "OpenAI /v1/tool_calls",
            f"{http}/v1/tool_calls",
            json.dumps(tool_call).encode(),
            JSON_HEADERS,
        ),
    ]


def noop_gateway(workdir: Path) -> list[str]:
    """The command that starts a gateway serving bench/noop_tools.py from one pod, its config
    written in `workdir`: what every door's CPU per call is measured on."""
    config = workdir / "toolmesh.toml"
    config.write_text(
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[router]\nenabled = false\n\n[jobs]\nenabled = false\n\n"
        '[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
        f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )
    return [sys.executable, "-m", "toolmesh", "up", "--config", str(config)]


def run(requests: int, clients: int, workdir: Path) -> dict[str, Measured]:
    env = dict(os.environ)
    python = sys.executable
    results: dict[str, Measured] = {}
    up = noop_gateway(workdir)
    with started(up, env, workdir / "gateway.err") as (pid, ports):
        http = f"http://{HOST}:{ports['http_port']}"
        for load in gateway_loads(http, ports["grpc_port"]):
            results[load.key] = measure(load, pid, requests, clients, workdir)
    with started([python, str(BENCH / "plain_starlette.py")], env, workdir / "plain.err") as (pid, ports):
        url = f"http://{HOST}:{ports['http_port']}/v1/functions/noop/invoke"
        results["starlette"] = measure(
            Load("starlette", "plain Starlette", url, b"{}", JSON_HEADERS), pid, requests, clients, workdir
        )
    with started([python, str(BENCH / "plain_grpc.py")], env, workdir / "plain_grpc.err") as (pid, ports):
        url = f"http://{HOST}:{ports['grpc_port']}/toolmesh.v1.Mesh/Invoke"
        plain = Load("plain_grpc", "plain grpc.aio", url, grpc_frame("noop"), GRPC_HEADERS, grpc=True)
        results["plain_grpc"] = measure(plain, pid, requests, clients, workdir)
    return results


ROWS = [
    ("http", "HTTP invoke", "starlette", 2.0),
    ("mcp_2025-11-25", "MCP tools/call 2025-11-25", "http", 1.5),
    ("mcp_2026-07-28", "MCP tools/call 2026-07-28", "http", 1.5),
    ("list_2025-11-25", "MCP tools/list 2025-11-25", "http", None),
    ("list_2026-07-28", "MCP tools/list 2026-07-28", "http", None),
    ("list_2025-11-25", "MCP tools/list 2025-11-25", "list_sdk_2025-11-25", None),
    ("list_2026-07-28", "MCP tools/list 2026-07-28", "list_sdk_2026-07-28", None),
    ("grpc", "gRPC Mesh/Invoke", "http", 1.5),
    ("grpc", "gRPC Mesh/Invoke", "plain_grpc", None),
    ("openai", "OpenAI /v1/tool_calls", "http", None),
]
NAMES = {
    "starlette": "plain Starlette",
    "http": "HTTP invoke",
    "plain_grpc": "plain grpc.aio",
    "list_sdk_2025-11-25": "its SDK path",
    "list_sdk_2026-07-28": "its SDK path",
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=20000, help="calls per measured run")
    parser.add_argument("--clients", type=int, default=16, help="connections (HTTP) or streams (gRPC)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if shutil.which("h2load") is None:
        print("h2load is missing: apt-get install nghttp2-client", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        results = run(args.requests, args.clients, Path(tmp))
    if args.json:
        print(json.dumps({key: vars(value) for key, value in results.items()}, indent=2))
        return 0
    print(f"cpus {os.cpu_count()}, {args.requests} calls per door, {args.clients} in flight\n")
    print(
        f"{'door':28} {'CPU µs/call':>11} {'pod µs':>7} {'req/s':>7}   "
        f"{'baseline':16} {'µs':>5} {'ratio':>6} {'goal':>6}"
    )
    for key, label, base, goal in ROWS:
        door, baseline = results[key], results[base]
        ratio = door.gateway_us / baseline.gateway_us
        aim = f"<={goal}" if goal is not None else ""
        print(
            f"{label:28} {door.gateway_us:11.1f} {door.pods_us:7.1f} {door.rps:7.0f}   "
            f"{NAMES[base]:16} {baseline.gateway_us:5.0f} {ratio:6.2f} {aim:>6}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
