"""Time to first token through the chat proxy, side by side with the upstream model direct.

    .venv/bin/python bench/chat_stream.py [--requests 40] [--first-ms 200] [--every-ms 20] [--tokens 20]

Starts bench/streaming_upstream.py (first token after --first-ms, then one every
--every-ms) and `toolmesh up` with ``[chat] upstream_url`` pointing at it, each a
process of its own, then asks for the same answer in turn, one request at a time:

    (a) upstream direct      stream: true, straight to the upstream
    (b) proxy, stream        stream: true, through POST /v1/chat/completions
    (c) proxy, no stream     stream: false through the proxy (the whole answer; fewer requests)

and prints the time to the first content token and to the end of the answer. The
target: (b)'s p50 time to first token is at most (a)'s plus 5 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
HOST = "127.0.0.1"
BODY = {"model": "bench-model", "messages": [{"role": "user", "content": "Say twenty words."}]}
TARGET_MS = 5.0


@contextlib.contextmanager
def started(command: list[str], stderr: Path) -> Iterator[int]:
    """Run `command` until the block ends; yield the http_port of its ready line."""
    with stderr.open("w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"{command!r} exited before it was ready; see {stderr}")
            yield int(json.loads(line)["http_port"])
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def streamed(http: httpx.Client, url: str) -> tuple[float, float]:
    """Seconds to the first content token and to ``[DONE]`` of one streamed answer."""
    began = time.perf_counter()
    first = None
    with http.stream("POST", url, json={**BODY, "stream": True}) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                break
            choices = json.loads(line[6:]).get("choices") or [{}]
            if first is None and choices[0].get("delta", {}).get("content"):
                first = time.perf_counter() - began
    if first is None:
        raise RuntimeError(f"{url} streamed no content")
    return first, time.perf_counter() - began


def whole(http: httpx.Client, url: str) -> tuple[float, float]:
    """Seconds to the whole answer of a request without ``stream`` (first token = last)."""
    began = time.perf_counter()
    response = http.post(url, json=BODY)
    response.raise_for_status()
    assert response.json()["choices"][0]["message"]["content"]
    elapsed = time.perf_counter() - began
    return elapsed, elapsed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=40, help="streamed requests per target")
    parser.add_argument("--first-ms", type=float, default=200.0)
    parser.add_argument("--every-ms", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=20)
    args = parser.parse_args()
    python = sys.executable
    shape = ["--first-ms", str(args.first_ms), "--every-ms", str(args.every_ms), "--tokens", str(args.tokens)]
    timings: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as work:
        workdir = Path(work)
        upstream_command = [python, str(BENCH / "streaming_upstream.py"), *shape]
        with started(upstream_command, workdir / "upstream.err") as upstream_port:
            config = workdir / "toolmesh.toml"
            config.write_text(
                "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n"
                '[[runtimes]]\nname = "bench"\nmodules = ["noop_tools"]\n'
                f'min_replicas = 1\nmax_replicas = 1\nenv = {{ PYTHONPATH = "{BENCH}" }}\n\n'
                f'[chat]\nupstream_url = "http://{HOST}:{upstream_port}/v1"\n'
            )
            gateway_command = [
                python,
                "-m",
                "toolmesh",
                "up",
                "--config",
                str(config),
                "--log-level",
                "warning",
            ]
            with started(gateway_command, workdir / "gateway.err") as gateway_port:
                direct = f"http://{HOST}:{upstream_port}/v1/chat/completions"
                proxied = f"http://{HOST}:{gateway_port}/v1/chat/completions"
                targets = [
                    ("(a) upstream direct, stream", lambda h: streamed(h, direct), args.requests),
                    ("(b) proxy, stream", lambda h: streamed(h, proxied), args.requests),
                    ("(c) proxy, no stream", lambda h: whole(h, proxied), max(args.requests // 4, 3)),
                ]
                with httpx.Client(timeout=60) as http:
                    for _, ask, _ in targets:
                        ask(http)  # warm-up: connections, the gateway's first upstream request
                    for index in range(args.requests):
                        for label, ask, count in targets:  # interleaved, so drift hits all alike
                            if index < count:
                                timings.setdefault(label, []).append(ask(http))
    print(
        f"\n    upstream: first token after {args.first_ms:g} ms, then one every {args.every_ms:g} ms, "
        f"{args.tokens} tokens; cpus {os.cpu_count()}\n"
    )
    print("| target | requests | first token p50 ms | p90 ms | max ms | whole answer p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, runs in timings.items():
        firsts = [first * 1000 for first, _ in runs]
        ends = [end * 1000 for _, end in runs]
        print(
            f"| {label} | {len(runs)} | {statistics.median(firsts):.1f} | {percentile(firsts, 0.9):.1f} "
            f"| {max(firsts):.1f} | {statistics.median(ends):.1f} |"
        )
    direct_p50 = statistics.median(f for f, _ in timings["(a) upstream direct, stream"]) * 1000
    proxy_p50 = statistics.median(f for f, _ in timings["(b) proxy, stream"]) * 1000
    overhead = proxy_p50 - direct_p50
    verdict = "met" if overhead <= TARGET_MS else "MISSED"
    print(f"\nproxy adds {overhead:.1f} ms to the first token at p50 (target <= {TARGET_MS:g} ms): {verdict}")
    return 0 if overhead <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
