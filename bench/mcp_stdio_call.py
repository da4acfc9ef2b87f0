"""A stdio MCP server as a runtime against calling it directly with the official client (issue #29).

The server is tests/fixtures/stdio_mcp_server.py (written with the MCP SDK; its `add` tool), or with
`--server everything` the official npm `server-everything` (node; its `echo` tool, installed under
tests/gateway/sources/everything). The tool is called sequentially (one in flight), warm, in
interleaved rounds:

  direct stdio      the SDK's ClientSession over stdio to a server this process started: the baseline
  via gateway       `POST /v1/functions/clock.add/invoke` on `toolmesh up` (its own process), whose pod
                    forwards the call to its server over stdio. Target: p50 within 1.3x of direct.
  gateway noop      a Python no-op function on that gateway: what the gateway and a pod cost on their own

Each gateway target is called by two clients, honestly labelled: httpx (an AsyncClient, what most
Python callers use; its own CPU per call, ~1 ms here, is most of a warm call on 2 cores) and
`lean`, a keep-alive HTTP/1.1 connection on a plain socket (what a caller that cares about
latency writes, or any client in a compiled language gets): the request's bytes written, the
answer read to its Content-Length. Both speak to the same gateway, one call in flight.

A second table splits the gateway's calls: `in pod` is the pod's own time for the call (the answer's
`timing.duration_ms`: the executor's, arguments to result), the rest the hops around it (client,
gateway, socket to the pod and back).

Then cold starts, the first call after the runtime scaled to zero (idle_timeout), side by side with a
Python runtime's: for MCP the pod and its server start (the tools were listed when the gateway started).

    .venv/bin/python bench/mcp_stdio_call.py [--calls 1000] [--rounds 3] [--cold 5] [--server everything]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING_MAIN = (
    ROOT
    / "tests/gateway/sources/everything/node_modules"
    / "@modelcontextprotocol/server-everything/dist/index.js"
)
#: Per server: its command, the tool called and its arguments.
SERVERS: dict[str, tuple[list[str], str, dict[str, object]]] = {
    "fixture": ([sys.executable, "-m", "tests.fixtures.stdio_mcp_server"], "add", {"a": 2, "b": 40}),
    "everything": (["node", str(EVERYTHING_MAIN), "stdio"], "echo", {"message": "hi"}),
}
#: Seconds without calls before a pod stops, in the cold-start part.
IDLE = 1.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def expected(tool: str, answer: dict[str, object]) -> bool:
    """Whether a gateway's answer (or a direct call's structured content) is the tool's."""
    if tool == "add":
        structured = answer.get("structured")
        return isinstance(structured, dict) and structured.get("total") == 42
    content = answer.get("content")
    return isinstance(content, list) and content[0].get("text") == "Echo: hi"


class LeanClient:
    """One keep-alive HTTP/1.1 connection, blocking: POST a JSON body, read the JSON answer (the
    gateway always sends Content-Length). What a latency-minded caller needs, and no more."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self._address = (host, int(port))
        self._host = f"{host}:{port}".encode()
        self._socket = self._connect()
        self._buffer = b""

    def _connect(self) -> socket.socket:
        connection = socket.create_connection(self._address)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    def _reuse(self) -> None:
        """Connect again when the gateway closed the idle connection (its keep-alive timeout),
        as httpcore checks before it reuses one: a peek that reads the end, or fails."""
        try:
            closed = self._socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return
        except OSError:
            closed = True
        if closed:
            self._socket.close()
            self._socket = self._connect()

    def post(self, path: str, body: bytes) -> dict[str, object]:
        self._reuse()
        self._socket.sendall(
            b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (path.encode(), self._host, len(body), body)
        )
        while b"\r\n\r\n" not in self._buffer:
            self._receive()
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        while len(rest) < length:
            self._buffer = rest
            self._receive()
            rest = self._buffer
        self._buffer = rest[length:]
        answer: dict[str, object] = json.loads(rest[:length])
        return answer

    def _receive(self) -> None:
        chunk = self._socket.recv(65536)
        if not chunk:
            raise ConnectionError("the gateway closed the connection")
        self._buffer += chunk

    def close(self) -> None:
        self._socket.close()


async def timed(call: Callable[[], Awaitable[float | None]], calls: int, pod: list[float]) -> list[float]:
    for _ in range(50):
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        inside = await call()
        samples.append((time.perf_counter() - started) * 1e6)
        if inside is not None:
            pod.append(inside * 1e3)
    return samples


async def warm(
    gateway: str, env: dict[str, str], server: str, calls: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    command, tool, arguments = SERVERS[server]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))
    results: dict[str, list[float]] = {}
    inside: dict[str, list[float]] = {}
    body = json.dumps(arguments).encode()
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
        httpx.AsyncClient(base_url=gateway, timeout=30) as client,
    ):
        await session.initialize()

        async def direct() -> None:
            answer = await session.call_tool(tool, arguments)
            shown = answer.model_dump(by_alias=True)
            assert expected(tool, {"structured": answer.structured_content, **shown}), answer

        async def gateway_call() -> float:
            answer = (await client.post(f"/v1/functions/clock.{tool}/invoke", content=body)).json()
            assert expected(tool, answer), answer
            return float(answer["timing"]["duration_ms"])

        async def noop() -> float:
            answer = (await client.post("/v1/functions/noop/invoke", content=b"{}")).json()
            assert answer["is_error"] is False, answer
            return float(answer["timing"]["duration_ms"])

        async def lean_call() -> float:
            # Blocking on purpose: one call in flight, and nothing else on this loop meanwhile.
            answer = lean.post(f"/v1/functions/clock.{tool}/invoke", body)
            assert expected(tool, answer), answer
            return float(answer["timing"]["duration_ms"])  # type: ignore[index]

        async def lean_noop() -> float:
            answer = lean.post("/v1/functions/noop/invoke", b"{}")
            assert answer["is_error"] is False, answer
            return float(answer["timing"]["duration_ms"])  # type: ignore[index]

        targets = {
            "direct stdio": direct,
            "via gateway (httpx)": gateway_call,
            "via gateway (lean)": lean_call,
            "gateway noop (httpx)": noop,
            "gateway noop (lean)": lean_noop,
        }
        lean = LeanClient(gateway)
        try:
            for _ in range(rounds):
                for name, call in targets.items():
                    samples = await timed(call, calls, inside.setdefault(name, []))
                    results.setdefault(name, []).extend(samples)
        finally:
            lean.close()
    return results, inside


async def cold(gateway: str, server: str, samples: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    _, tool, arguments = SERVERS[server]
    calls = {f"clock.{tool}": json.dumps(arguments).encode(), "noop": b"{}"}
    async with httpx.AsyncClient(base_url=gateway, timeout=60) as client:
        for _ in range(samples):
            await asyncio.sleep(IDLE + 2)  # both runtimes at zero pods
            for name, body in calls.items():
                started = time.perf_counter()
                answer = (await client.post(f"/v1/functions/{name}/invoke", content=body)).json()
                results.setdefault(name, []).append((time.perf_counter() - started) * 1e3)
                assert answer["is_error"] is False, answer
    return results


def start_gateway(
    work: Path, env: dict[str, str], port: int, idle: float | None, server: str = "fixture"
) -> subprocess.Popen[str]:
    idle_line = f"idle_timeout = {idle}\n" if idle is not None else "min_replicas = 1\n"
    config = work / f"toolmesh-{port}.toml"
    config.write_text(
        f"[gateway]\nhttp_port = {port}\ngrpc_port = 0\naccess_log = false\n"
        f'[[runtimes]]\nname = "noop"\nmodules = ["bench.noop_tools"]\nlog_level = "warning"\n{idle_line}'
        f'[[runtimes]]\nname = "clock"\nmcp_command = {json.dumps(SERVERS[server][0])}\n'
        f'log_level = "warning"\n{idle_line}'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "toolmesh", "up", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**env, "TMPDIR": str(work), "XDG_DATA_HOME": str(work / "data")},
        cwd=ROOT,
    )
    assert process.stdout is not None
    process.stdout.readline()  # the ready line
    return process


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def table(title: str, results: dict[str, list[float]], unit: str, base: str | None) -> None:
    print(title)
    print(f"| target | p50 {unit} | p99 {unit} |" + (f" p50 vs {base} |" if base else ""))
    print("|---|---|---|" + ("---|" if base else ""))
    reference = statistics.median(results[base]) if base else 0.0
    for name, samples in results.items():
        samples.sort()
        p50, p99 = statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        ratio = f" {p50 / reference:.2f}x |" if base else ""
        print(f"| {name} | {p50:.0f} | {p99:.0f} |{ratio}")


def hops(results: dict[str, list[float]], inside: dict[str, list[float]]) -> None:
    """The gateway's calls split: the pod's own time, and the hops around it (p50s)."""
    print("| target | whole p50 µs | in pod p50 µs | around the pod µs |")
    print("|---|---|---|---|")
    for name in [name for name in results if name.startswith(("via gateway", "gateway noop"))]:
        whole, pod = statistics.median(results[name]), statistics.median(inside[name])
        print(f"| {name} | {whole:.0f} | {pod:.0f} | {whole - pod:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="warm calls per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", type=int, default=5, help="cold starts per runtime (0: none)")
    parser.add_argument("--server", choices=sorted(SERVERS), default="fixture")
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory(prefix="tm-bench-") as tmp:
        port = free_port()
        gateway = start_gateway(Path(tmp), env, port, None, args.server)
        try:
            url = f"http://127.0.0.1:{port}"
            results, inside = asyncio.run(warm(url, env, args.server, args.calls, args.rounds))
        finally:
            stop(gateway)
        starts: dict[str, list[float]] = {}
        if args.cold:
            port = free_port()
            gateway = start_gateway(Path(tmp), env, port, IDLE, args.server)
            try:
                starts = asyncio.run(cold(f"http://127.0.0.1:{port}", args.server, args.cold))
            finally:
                stop(gateway)
    table(
        f"warm ({args.server} server): {args.rounds} rounds x {args.calls} sequential calls per target",
        results,
        "µs",
        "direct stdio",
    )
    print()
    hops(results, inside)
    if starts:
        print()
        table(f"cold: the first call after scale to zero, {args.cold} each", starts, "ms", None)


if __name__ == "__main__":
    main()
